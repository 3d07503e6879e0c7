# The CUDA switch: ON requires a CUDA compiler, AUTO builds the CUDA backend when one is found,
# OFF never does. IL_HAVE_CUDA tells the rest of the build which it got.
set(IL_HAVE_CUDA OFF)
if(IL_CUDA STREQUAL "ON" OR IL_CUDA STREQUAL "AUTO")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(IL_HAVE_CUDA ON)
  elseif(IL_CUDA STREQUAL "ON")
    message(FATAL_ERROR "IL_CUDA=ON but no CUDA compiler was found (set CMAKE_CUDA_COMPILER)")
  endif()
elseif(NOT IL_CUDA STREQUAL "OFF")
  message(FATAL_ERROR "IL_CUDA must be ON, OFF or AUTO (got '${IL_CUDA}')")
endif()

if(IL_HAVE_CUDA)
  # sm_80 (A100) and sm_90 (H100/H200), each with PTX so newer GPUs JIT-compile. Set before
  # enable_language so CMake does not substitute the compiler's default. The GPU lease builds
  # pass -DCMAKE_CUDA_ARCHITECTURES=90 to keep the carried binaries small.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
    set(CMAKE_CUDA_ARCHITECTURES "80;90" CACHE STRING "CUDA architectures to build for" FORCE)
  endif()
  enable_language(CUDA)
  if(DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA_STANDARD 20)
  else()
    # CMake 3.25 knows no C++20 flag for nvcc and then refuses to generate (the project's C++20
    # reaches the CUDA targets): resolve the dialect as 17 and make its flag ask for C++20.
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA17_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA17_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  find_package(CUDAToolkit REQUIRED)
  message(STATUS "inferencelayer: CUDA ${CUDAToolkit_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES}")
endif()
message(STATUS "inferencelayer: CUDA backend ${IL_HAVE_CUDA}")

# Settings for targets holding .cu files. Host code stays warning-free: the host compiler gets
# -Wall -Wextra -Werror, and nvcc's own diagnostics are errors too (all-warnings).
function(il_cuda_defaults target)
  target_compile_options(${target} PRIVATE
    "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Werror;-Werror=all-warnings>")
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
  set_target_properties(${target} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF POSITION_INDEPENDENT_CODE ON)
endfunction()
