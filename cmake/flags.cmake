# Compiler flags shared by every target of the project.
#
# No fast-math anywhere: the quantizers must be bit-identical between CPU and
# GPU, and that needs IEEE division and no contraction surprises.
set(FP4MOE_CUDA_GENCODE "-gencode=arch=compute_90a,code=sm_90a")

function(fp4moe_target_flags target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>
    $<$<COMPILE_LANGUAGE:CUDA>:${FP4MOE_CUDA_GENCODE} --expt-relaxed-constexpr --extended-lambda -lineinfo
                               -Xcompiler=-Wall -Xcompiler=-Wno-unused-parameter>)
  # Without this CMake appends its own (empty) architecture flags.
  set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES OFF)
endfunction()
