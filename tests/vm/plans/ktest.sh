# The kernel path without libibverbs: channels, frames, bogus doorbells.
if [ $have_ktest = 1 ]; then
	timeout 60 u4v_ktest 2
	step ktest $?
	# RC through the engine over four lanes, every message checked
	timeout 120 u4v_ktest lanerc
	step ktest_lanerc $?
	# allow_direct=0: direct mode refused even for root
	timeout 20 u4v_ktest refused
	step direct_refused_param $?
else
	skipstep ktest "u4v_ktest not built"
fi
