# cmake -DLIB=<libibverbs.so.1.N.R> -DEXPECT=<regex> [-DREFUSED=ON]
#       [-DSRC=<project> -DBIN=<dir>] -P check.cmake
#
# Without SRC: runs the provider's private-ABI detection
# (providers/usb4verbs/pabi.cmake) on LIB; with SRC: configures the whole
# project against LIB. Passes when the outcome (refused or not) is the
# expected one and the output, spacing squeezed (CMake wraps its error
# messages), matches EXPECT.
if(SRC)
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${SRC} -B ${BIN}
    -DIBVERBS_LIBRARY=${LIB} RESULT_VARIABLE rc OUTPUT_VARIABLE out
    ERROR_VARIABLE err)
else()
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/pabi-detect-${EXPECT_ID}.cmake "
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../../providers/usb4verbs/pabi.cmake)
u4v_pabi_detect(\"${LIB}\")
message(\"pabi=\${U4V_PABI} release=\${U4V_RDMA_CORE} \"
  \"class=\${U4V_ABI_FIRST}..\${U4V_ABI_LAST} depends=\${U4V_IBVERBS_DEPENDS}\")
")
  execute_process(COMMAND ${CMAKE_COMMAND}
    -P ${CMAKE_CURRENT_BINARY_DIR}/pabi-detect-${EXPECT_ID}.cmake
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
endif()
string(REGEX REPLACE "[ \t\r\n]+" " " text "${out} ${err}")
if(REFUSED AND rc EQUAL 0)
  message(FATAL_ERROR "accepted, but should have been refused: ${text}")
elseif(NOT REFUSED AND NOT rc EQUAL 0)
  message(FATAL_ERROR "refused (${rc}), but should have been accepted: ${text}")
endif()
if(NOT text MATCHES "${EXPECT}")
  message(FATAL_ERROR "output lacks /${EXPECT}/: ${text}")
endif()
message("ok: ${text}")
