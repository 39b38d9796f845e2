# Which libibverbs private interface the provider is built for, and which
# libibverbs releases it then loads with.
#
# libibverbs loads providers through a private interface whose version
# (PABI) is in the name of the registration entry point and of its symbol
# version (verbs_register_driver_<N>@IBVERBS_PRIVATE_<N>). The PABI is not
# enough: rdma-core changes what a provider shares with the library inside
# one PABI too (PABI 34 spans rdma-core 34 to 56; verbs_context_ops gained
# a slot in 36, ibv_qp_ex grew in 44 and 45, moving verbs_qp.comp_mask, and
# ibv_port_attr, which the provider fills, grew in 49).
# So the provider is bound to a class: rdma-core releases whose layouts and
# signatures, as far as the provider shares them, are identical.
#
# U4V_ABI_CLASSES, one entry a class, PABI:FIRST:LAST (rdma-core major
# versions): each was verified with tools/pabi/scan.sh against rdma-core's
# own sources (docs/PABI.md), and abi.h checks the class's figures at
# compile time. A library outside every class is refused at configure time.
set(U4V_ABI_CLASSES 34:44:44 34:49:56 65:65:65)

# Output: U4V_PABI, U4V_RDMA_CORE (e.g. 44.0), U4V_ABI_FIRST, U4V_ABI_LAST,
# U4V_IBVERBS_DEPENDS (Debian relation on libibverbs1) in the caller's scope.
function(u4v_pabi_detect lib)
  get_filename_component(real "${lib}" REALPATH)
  find_program(U4V_READELF NAMES readelf ${CMAKE_READELF})
  find_program(U4V_OBJDUMP NAMES objdump ${CMAKE_OBJDUMP})
  if(U4V_READELF)
    execute_process(COMMAND ${U4V_READELF} --dyn-syms -W "${real}"
      OUTPUT_VARIABLE syms ERROR_QUIET)
  elseif(U4V_OBJDUMP)
    execute_process(COMMAND ${U4V_OBJDUMP} -T "${real}"
      OUTPUT_VARIABLE syms ERROR_QUIET)
  else()
    message(FATAL_ERROR "usb4verbs provider: need readelf or objdump "
      "(binutils) to find the private ABI version of ${real}")
  endif()
  # readelf: "verbs_register_driver_34@@IBVERBS_PRIVATE_34";
  # objdump: "IBVERBS_PRIVATE_34 verbs_register_driver_34".
  string(REGEX MATCHALL "verbs_register_driver_[0-9]+@+IBVERBS_PRIVATE_[0-9]+"
    reg "${syms}")
  if(NOT reg)
    string(REGEX MATCHALL
      "IBVERBS_PRIVATE_[0-9]+[ \t]+verbs_register_driver_[0-9]+" reg "${syms}")
  endif()
  list(REMOVE_DUPLICATES reg)
  list(LENGTH reg nreg)
  if(NOT nreg EQUAL 1)
    message(FATAL_ERROR "usb4verbs provider: cannot tell the private ABI of "
      "${real}: expected one verbs_register_driver_<N> symbol in version "
      "IBVERBS_PRIVATE_<N>, found '${reg}'")
  endif()
  string(REGEX MATCHALL "[0-9]+" nums "${reg}")
  list(GET nums 0 pabi)
  list(GET nums 1 pabi_b)
  if(NOT pabi STREQUAL pabi_b)
    message(FATAL_ERROR "usb4verbs provider: inconsistent private ABI in "
      "${real}: ${reg}")
  endif()

  # rdma-core names the library libibverbs.so.1.<abi minor>.<release>.
  if(NOT real MATCHES "libibverbs\\.so\\.1\\.[0-9]+\\.(([0-9]+)\\.[0-9]+)$")
    message(FATAL_ERROR "usb4verbs provider: cannot tell the rdma-core "
      "release of ${real} (expected libibverbs.so.1.<n>.<release>)")
  endif()
  set(release ${CMAKE_MATCH_1})
  set(major ${CMAKE_MATCH_2})

  # "34 (rdma-core 44, 49-56), 65 (rdma-core 65)" for the messages
  set(known_pabis)
  foreach(class IN LISTS U4V_ABI_CLASSES)
    string(REPLACE ":" ";" f "${class}")
    list(GET f 0 c_pabi)
    list(GET f 1 c_first)
    list(GET f 2 c_last)
    if(NOT c_pabi IN_LIST known_pabis)
      list(APPEND known_pabis ${c_pabi})
    endif()
    if(c_first EQUAL c_last)
      list(APPEND releases_${c_pabi} "${c_first}")
    else()
      list(APPEND releases_${c_pabi} "${c_first}-${c_last}")
    endif()
    if(pabi EQUAL c_pabi AND major GREATER_EQUAL c_first AND
       major LESS_EQUAL c_last)
      set(first ${c_first})
      set(last ${c_last})
    endif()
  endforeach()
  set(pabi_known FALSE)
  if(pabi IN_LIST known_pabis)
    set(pabi_known TRUE)
  endif()
  set(known)
  foreach(p IN LISTS known_pabis)
    list(JOIN releases_${p} ", " r)
    list(APPEND known "${p} (rdma-core ${r})")
  endforeach()
  list(JOIN known ", " known)
  set(how "Check the layouts with tools/pabi/scan.sh and add the release to \
providers/usb4verbs/pabi.cmake and abi.h (docs/PABI.md).")
  if(NOT pabi_known)
    message(FATAL_ERROR "usb4verbs provider: ${real} (rdma-core ${release}) "
      "uses private ABI IBVERBS_PRIVATE_${pabi}, which this provider does not "
      "know: it knows private ABIs ${known}. ${how}")
  endif()
  if(NOT first)
    message(FATAL_ERROR "usb4verbs provider: ${real} is rdma-core "
      "${release}, private ABI ${pabi}, a release whose provider interface "
      "has not been verified; verified: private ABIs ${known}. ${how}")
  endif()
  math(EXPR next "${last} + 1")
  set(U4V_PABI ${pabi} PARENT_SCOPE)
  set(U4V_RDMA_CORE ${release} PARENT_SCOPE)
  set(U4V_ABI_FIRST ${first} PARENT_SCOPE)
  set(U4V_ABI_LAST ${last} PARENT_SCOPE)
  set(U4V_IBVERBS_DEPENDS
    "libibverbs1 (>= ${first}~), libibverbs1 (<< ${next}~)" PARENT_SCOPE)
endfunction()
