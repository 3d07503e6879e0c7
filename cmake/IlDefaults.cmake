# Compile settings every project target gets: warnings are errors, sanitizers when asked.
function(il_defaults target)
  # C++ only: nvcc takes its warning flags through il_cuda_defaults (cmake/IlCuda.cmake).
  target_compile_options(${target} PRIVATE
    "$<$<COMPILE_LANGUAGE:CXX>:-Wall;-Wextra;-Wpedantic;-Werror;-Wno-missing-field-initializers>")
  # GCC 12 reports -Wrestrict false positives inside libstdc++ string concatenation at -O3
  # (GCC bug 105329); the warning stays on for other compilers.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>)
  endif()
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
endfunction()

if(IL_SANITIZE)
  message(STATUS "inferencelayer: building with -fsanitize=${IL_SANITIZE}")
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${IL_SANITIZE};-fno-omit-frame-pointer;-fno-sanitize-recover=all>")
  add_link_options(-fsanitize=${IL_SANITIZE})
endif()

if(IL_LIBFUZZER)
  # Coverage feedback, ASan and UBSan in every target, so the libraries a fuzz target links are
  # instrumented as much as its own file; the fuzz targets add libFuzzer's main when linking
  # (fuzz/CMakeLists.txt). A sanitizer report ends the run, so libFuzzer keeps the input.
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "IL_LIBFUZZER needs clang (-DCMAKE_CXX_COMPILER=clang++)")
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link,address,undefined>"
    "$<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer;-fno-sanitize-recover=all>")
  add_link_options(-fsanitize=address,undefined)
endif()
