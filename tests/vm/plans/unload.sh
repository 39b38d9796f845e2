# Unload with an application still attached: the device must be
# disassociated, rmmod must finish, and the application must notice.
# Leaves the module loaded again (default parameters) for the next plan.
if [ $have_ktest = 1 ]; then
	timeout 60 u4v_ktest hold >/tmp/hold.out 2>&1 &
	hpid=$!
	i=0
	while ! grep -q holding /tmp/hold.out && [ $i -lt 100 ]; do sleep 0.2; i=$((i + 1)); done
	u4v_unload
	rc=$?
	u4v_loaded && rc=1
	step unload_with_user $rc
	wait $hpid
	hrc=$?
	cat /tmp/hold.out
	step holder_saw_removal $hrc
else
	u4v_unload
	step unload $?
fi
u4v_loaded || u4v_load
