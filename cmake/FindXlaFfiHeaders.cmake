# Locate the XLA FFI headers (xla/ffi/api/{ffi,api,c_api}.h) for the JAX extension
# _nvfp4_xla; never committed. First found of:
#   1. -DNVFP4_XLA_FFI_DIR=<dir with xla/ffi/api/ffi.h>
#   2. an installed jaxlib (its include dir, what jax.ffi.include_dir() returns)
#   3. `pip download jaxlib==${NVFP4_JAXLIB_WHEEL_VERSION}` (else the newest jaxlib for this
#      interpreter) into the build tree, of which only jaxlib/include/xla/ffi/ is extracted
#      (needs PyPI)
# Sets out_var to the include dir, or to "" when none works (the module is then skipped).
set(NVFP4_XLA_FFI_DIR "" CACHE PATH "Dir with xla/ffi/api/ffi.h; found automatically when empty")
set(NVFP4_JAXLIB_WHEEL_VERSION "0.10.2" CACHE STRING "jaxlib wheel downloaded for its XLA FFI headers")

function(nvfp4_find_xla_ffi out_var)
  set(${out_var} "" PARENT_SCOPE)
  if(NVFP4_XLA_FFI_DIR)
    if(EXISTS "${NVFP4_XLA_FFI_DIR}/xla/ffi/api/ffi.h")
      set(${out_var} "${NVFP4_XLA_FFI_DIR}" PARENT_SCOPE)
    else()
      message(WARNING "NVFP4_XLA_FFI_DIR=${NVFP4_XLA_FFI_DIR} has no xla/ffi/api/ffi.h")
    endif()
    return()
  endif()
  if(NOT Python_EXECUTABLE)
    return()
  endif()
  # -I first: inside pip's isolated build environment the interpreter's own site-packages
  # (where jaxlib and pip live) are hidden behind PYTHONPATH; isolated mode ignores it.
  foreach(_flag -I "")
    execute_process(
      COMMAND "${Python_EXECUTABLE}" ${_flag} -c
        "import jaxlib, os; print(os.path.join(os.path.dirname(jaxlib.__file__), 'include'))"
      OUTPUT_VARIABLE _inc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
    if(_rc EQUAL 0 AND EXISTS "${_inc}/xla/ffi/api/ffi.h")
      set(${out_var} "${_inc}" PARENT_SCOPE)
      return()
    endif()
  endforeach()

  set(_dl "${CMAKE_BINARY_DIR}/_jaxlib_wheel")
  set(_inc "${_dl}/unpacked/jaxlib/include")
  if(NOT EXISTS "${_inc}/xla/ffi/api/ffi.h")
    message(STATUS "nvfp4: downloading jaxlib==${NVFP4_JAXLIB_WHEEL_VERSION} from PyPI for its XLA FFI headers")
    # The pinned version, else the newest jaxlib for this interpreter (the FFI API is
    # backward compatible: handlers built on older headers run on newer XLA).
    set(_rc 1)
    foreach(_req "jaxlib==${NVFP4_JAXLIB_WHEEL_VERSION}" "jaxlib")
      foreach(_flag -I "")
        execute_process(
          COMMAND "${Python_EXECUTABLE}" ${_flag} -m pip download --no-deps --only-binary=:all: "${_req}" -d "${_dl}"
          RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
        if(_rc EQUAL 0)
          break()
        endif()
      endforeach()
      if(_rc EQUAL 0)
        break()
      endif()
    endforeach()
    file(GLOB _whl "${_dl}/jaxlib-*.whl")
    if(_rc EQUAL 0 AND _whl)
      list(GET _whl 0 _whl)
      file(ARCHIVE_EXTRACT INPUT "${_whl}" DESTINATION "${_dl}/unpacked" PATTERNS "jaxlib/include/xla/ffi/*")
      file(REMOVE "${_whl}")  # ~85 MB; only the three headers are kept
    endif()
  endif()
  if(EXISTS "${_inc}/xla/ffi/api/ffi.h")
    set(${out_var} "${_inc}" PARENT_SCOPE)
  endif()
endfunction()
