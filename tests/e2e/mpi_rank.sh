#!/bin/sh
# SPDX-License-Identifier: MIT
#
# One MPI rank on its own end of the software cable: mpirun starts this
# wrapper for every rank; rank N gets UCX_NET_DEVICES=$U4V_MPI_DEV<N>:1 and
# becomes the program.
#
#   U4V_MPI_DEV0=usb4vsim0 U4V_MPI_DEV1=usb4vsim1 mpirun ... mpi_rank.sh PROG ARGS...
case ${OMPI_COMM_WORLD_RANK:?not started by Open MPI} in
0) dev=${U4V_MPI_DEV0:?} ;;
1) dev=${U4V_MPI_DEV1:?} ;;
*) echo "mpi_rank.sh: rank $OMPI_COMM_WORLD_RANK: only two ends" >&2; exit 2 ;;
esac
UCX_NET_DEVICES=$dev:1
export UCX_NET_DEVICES
exec "$@"
