# UCX (Debian's ucx-utils, unmodified) over a software cable, each case a
# pair of ucx_perftest processes. Only the variables that keep the traffic
# on the cable are set: UCX_TLS and each side's UCX_NET_DEVICES (UCP); no
# workaround variable. Every case moves ITERS messages of SIZE bytes one way
# (to0: to end 0, the server; to1: to end 1, the client) or both, and checks
# that at least that many bytes crossed the cable that way (not shared
# memory, not the loopback channel). ucx_perftest checks no data: the UCP
# payloads are checked by ucp_check (tests/ucx/).

# CROSSED "b0 b1" of ITERS x SIZE bytes moved DIR (to0, to1 or both).
function(u4v_ucx_crossed out dir iters size)
  math(EXPR b "${iters} * ${size}")
  if(dir STREQUAL "to0")
    set(${out} "${b} 0" PARENT_SCOPE)
  elseif(dir STREQUAL "to1")
    set(${out} "0 ${b}" PARENT_SCOPE)
  else()
    set(${out} "${b} ${b}" PARENT_SCOPE)
  endif()
endfunction()

u4v_e2e_add(ucx_info 30 ${BASH_PROGRAM} ${U4V_E2E_DIR}/ucx_info.sh
  --name e2e-ucx-info)

set(UCX_FINAL "^Final:[ \t]+[0-9]+")

# Debian 13's ucx_perftest (1.18) is built with MPI and, when its stdin is no
# terminal, takes itself for one rank of an MPI job ("should be run with
# exactly 2 processes"); its -P 0 makes it a plain client/server pair.
# Debian 12's (1.13) has no MPI mode and no -P.
set(UCX_PERFTEST ucx_perftest)
execute_process(COMMAND ucx_perftest -h OUTPUT_VARIABLE ucx_help
  ERROR_VARIABLE ucx_help RESULT_VARIABLE ucx_rc)
if(ucx_help MATCHES "-P <0[|]1>")
  list(APPEND UCX_PERFTEST -P 0)
endif()

# UCT: each side runs in its own end's view (ENDS) where both call their
# device @D0@. UCX 1.13's client sends its -x and -d to the server; 1.18's
# server wants its own.
function(u4v_e2e_uct name tl test dir iters size)
  u4v_ucx_crossed(crossed ${dir} ${iters} ${size})
  u4v_e2e_pair(ucx_${name} 60 ENDS CROSSED "${crossed}"
    EXPECT "${UCX_FINAL}"
    SERVER ${UCX_PERFTEST} -p @PORT@ -x ${tl} -d @D0@:1
    CLIENT ${UCX_PERFTEST} 127.0.0.1 -p @PORT@ -x ${tl} -d @D0@:1 -t ${test}
      -n ${iters} -w 10 -s ${size} ${ARGN})
endfunction()

u4v_e2e_uct(rc_am_short rc_verbs am_lat both 1000 8 -D short)
u4v_e2e_uct(rc_am_bcopy rc_verbs am_bw to0 1000 4096 -D bcopy)
u4v_e2e_uct(rc_am_zcopy rc_verbs am_bw to0 1000 8192 -D zcopy)
u4v_e2e_uct(rc_put_short rc_verbs put_lat both 1000 8 -D short)
u4v_e2e_uct(rc_put_bcopy rc_verbs put_bw to0 1000 4096 -D bcopy)
u4v_e2e_uct(rc_put_zcopy rc_verbs put_bw to0 200 65536 -D zcopy)
u4v_e2e_uct(rc_get_bcopy rc_verbs get to1 1000 4096 -D bcopy)
u4v_e2e_uct(rc_get_zcopy rc_verbs get to1 200 65536 -D zcopy)
# rc_verbs offers add, fetch-add and compare-swap (no plain swap: IB verbs
# have none; UCP emulates it, see ucp_swap)
u4v_e2e_uct(rc_add rc_verbs add_lat to0 1000 8)
u4v_e2e_uct(rc_fadd rc_verbs fadd both 1000 8)
u4v_e2e_uct(rc_cswap rc_verbs cswap both 1000 8)
u4v_e2e_uct(ud_am_short ud_verbs am_lat both 1000 8 -D short)
u4v_e2e_uct(ud_am_bcopy ud_verbs am_bw to0 1000 1024 -D bcopy)

# UCP: each side picks its own end with UCX_NET_DEVICES.
set(UCP_TLS UCX_TLS=rc_verbs,ud_verbs,self)
function(u4v_e2e_ucp test dir iters size)
  u4v_ucx_crossed(crossed ${dir} ${iters} ${size})
  string(REGEX REPLACE "^ucp_" "" short ${test})
  u4v_e2e_pair(ucx_ucp_${short} 60 CROSSED "${crossed}"
    EXPECT "${UCX_FINAL}"
    SERVER env ${UCP_TLS} UCX_NET_DEVICES=@D0@:1 ${UCX_PERFTEST} -p @PORT@
    CLIENT env ${UCP_TLS} UCX_NET_DEVICES=@D1@:1
      ${UCX_PERFTEST} 127.0.0.1 -p @PORT@ -t ${test} -n ${iters} -w 10
      -s ${size} ${ARGN})
endfunction()

u4v_e2e_ucp(tag_lat both 1000 8)
u4v_e2e_ucp(tag_bw to0 200 65536)
u4v_e2e_ucp(ucp_put_lat both 1000 8)
u4v_e2e_ucp(ucp_put_bw to0 200 65536)
u4v_e2e_ucp(ucp_get to1 200 65536)
u4v_e2e_ucp(ucp_add to0 1000 8)
u4v_e2e_ucp(ucp_fadd both 1000 8)
u4v_e2e_ucp(ucp_swap both 1000 8)
u4v_e2e_ucp(ucp_cswap both 1000 8)
u4v_e2e_ucp(stream_lat both 1000 8)
u4v_e2e_ucp(stream_bw to0 200 65536)
u4v_e2e_ucp(ucp_am_lat both 1000 8)
u4v_e2e_ucp(ucp_am_bw to0 200 65536)

# ucp_check (tests/ucx): every UCP operation once, payloads checked. The
# target (end 0) checks 9 transfers of 4202350 bytes sent to it, the
# initiator 8 of 2101202 bytes (2101170 of them came across, 32 are the
# atomics' fetched values).
if(TARGET ucp_check)
  set(UCP_CHECK $<TARGET_FILE:ucp_check>)
else()
  set(UCP_CHECK ucp_check-not-built-install-libucx-dev)
endif()
u4v_e2e_pair(ucx_ucp_check 60 CROSSED "4202350 2101170"
  EXPECT "^ucp_check: 9 checks passed" "^ucp_check: 8 checks passed"
  SERVER env ${UCP_TLS} UCX_NET_DEVICES=@D0@:1 ${UCP_CHECK} -p @PORT@ -t 50
  CLIENT env ${UCP_TLS} UCX_NET_DEVICES=@D1@:1 ${UCP_CHECK} -p @PORT@ -t 50
    127.0.0.1)

# Open MPI over UCX: one rank per end, see mpi.sh for every setting.
if(TARGET mpi_pingpong)
  set(MPI_PINGPONG $<TARGET_FILE:mpi_pingpong>)
else()
  set(MPI_PINGPONG mpi_pingpong-not-built-install-libopenmpi-dev)
endif()
u4v_e2e_add(mpi_ucx_pingpong 120 ${BASH_PROGRAM} ${U4V_E2E_DIR}/mpi.sh
  --name mpi_ucx_pingpong --timeout 120 ${MPI_PINGPONG} -t 110)
