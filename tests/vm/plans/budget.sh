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
# Lanes in the budget: soft_channels=3 (a fourth lane is ENOSPC, the lanes
# come back when a context leaves, RC over the lanes there are).
if [ $have_ktest = 1 ] && u4v_unload; then
	u4v_load soft_channels=3
	step load_budget_3 $?
	timeout 120 u4v_ktest lanebudget
	step lane_budget $?
	u4v_unload
	step unload_budget_3 $?
	u4v_load
else
	skipstep lane_budget "u4v_ktest not built or module busy"
fi
