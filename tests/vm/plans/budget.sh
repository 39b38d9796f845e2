# The channel budget: soft_channels=1 (ENOSPC, returned when a peer leaves).
if [ $have_ktest = 1 ] && u4v_unload; then
	u4v_load soft_channels=1
	step load_budget_1 $?
	timeout 60 u4v_ktest budget
	step channel_budget $?
	u4v_unload
	step unload_budget $?
	u4v_load
else
	skipstep channel_budget "u4v_ktest not built or module busy"
fi
