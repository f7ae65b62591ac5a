// What the numbers and names in crash evidence usually mean (docs/crash-evidence.md).
#include "rocplay/crash/crash.hpp"

namespace rocplay::crash {

std::string_view explain_xid(std::int64_t xid) {
  switch (xid) {
  case 13:
    return "graph engine exception: often an out-of-range access or a device assert in a kernel";
  case 31:
    return "GPU memory page fault: a kernel touched an address it had no mapping for";
  case 43:
    return "GPU stopped processing: a kernel faulted and the channel was torn down";
  case 45:
    return "preemptive cleanup after a previous error (follows the real error; look before it)";
  case 48:
    return "double-bit ECC error: uncorrectable memory error, a hardware problem";
  case 63:
  case 64:
    return "ECC page retirement or row remapping: memory hardware degrading";
  case 74:
    return "NVLink error: the link between GPUs failed";
  case 79:
    return "GPU has fallen off the bus: power, thermal or PCIe failure; the node needs attention";
  case 92:
    return "high single-bit ECC error rate";
  case 94:
    return "contained ECC error: the affected application must restart";
  case 95:
    return "uncontained ECC error: every application on the GPU must restart, reset the GPU";
  case 109:
    return "context-switch timeout: a kernel did not yield (a hang or very long kernel)";
  case 119:
    return "GSP RPC timeout: the GPU's system processor stopped responding";
  case 120:
    return "GSP error: the GPU's system processor reported an error";
  default:
    break;
  }
  return "see NVIDIA's Xid catalogue for this number";
}

std::string_view explain_utcl2_client(std::string_view client) {
  if (client.starts_with("TCP")) {
    return "a shader's vector memory access (a kernel's load or store)";
  }
  if (client.starts_with("SQC (inst)") || client.starts_with("SQC (inst")) {
    return "a shader's instruction fetch (jumped to a bad code address)";
  }
  if (client.starts_with("SQC")) {
    return "a shader's scalar or instruction fetch";
  }
  if (client.starts_with("CPC") || client.starts_with("CPF") || client.starts_with("CPG")) {
    return "the command processor (a bad packet, queue or kernel-argument address)";
  }
  if (client.starts_with("SDMA")) {
    return "a copy engine (a hipMemcpy/DMA with a bad source or destination)";
  }
  if (client.starts_with("TCC") || client.starts_with("TA") || client.starts_with("TD")) {
    return "the shader memory pipeline (a kernel's access)";
  }
  if (client.starts_with("RLC")) {
    return "the run-list controller (driver or firmware)";
  }
  return {};
}

std::string_view explain_gpu_error(std::string_view name) {
  auto is = [&](std::string_view hip, std::string_view cuda) {
    return name == hip || name == cuda;
  };
  if (is("hipErrorIllegalAddress", "cudaErrorIllegalAddress")) {
    return "a kernel accessed memory out of bounds (check the inputs' shapes, index bounds and "
           "contiguity)";
  }
  if (is("hipErrorAssert", "cudaErrorAssert")) {
    return "a device-side assert fired in a kernel (input validation, an index out of range)";
  }
  if (is("hipErrorOutOfMemory", "cudaErrorMemoryAllocation")) {
    return "GPU memory exhausted (batch size, model size, KV-cache size, or fragmentation)";
  }
  if (is("hipErrorLaunchFailure", "cudaErrorLaunchFailure")) {
    return "a kernel failed at launch or while running (shared memory size, block dimensions, "
           "or a fault reported late)";
  }
  if (is("hipErrorNoBinaryForGpu", "cudaErrorNoKernelImageForDevice")) {
    return "no code object for this GPU's architecture: the build targets another gfx (gfx942 "
           "for MI300X/MI325X, gfx950 for MI355X)";
  }
  if (is("hipErrorInvalidDeviceFunction", "cudaErrorInvalidDeviceFunction")) {
    return "the kernel has no code for this GPU (usually a gfx target mismatch)";
  }
  if (is("hipErrorLaunchOutOfResources", "cudaErrorLaunchOutOfResources")) {
    return "the launch asked for more registers, LDS or threads than the GPU has";
  }
  if (is("hipErrorIllegalInstruction", "cudaErrorIllegalInstruction")) {
    return "a kernel executed an invalid instruction (wrong target, corrupted code)";
  }
  if (is("hipErrorMisalignedAddress", "cudaErrorMisalignedAddress")) {
    return "a kernel made a misaligned access (a tensor view with an odd offset)";
  }
  if (is("hipErrorLaunchTimeOut", "cudaErrorLaunchTimeout")) {
    return "a kernel ran past the watchdog (a hang)";
  }
  return "a GPU runtime error; the name says which";
}

std::string_view explain_exit_status(int status) {
  switch (status) {
  case 137:
    return "SIGKILL: usually the host OOM killer or a container memory limit (`docker inspect` "
           "shows OOMKilled)";
  case 139:
    return "SIGSEGV: a host-side segmentation fault (pointer corruption, a bad host access)";
  case 134:
    return "SIGABRT: an abort, often a failed assertion or a C++ exception nobody caught";
  case 135:
    return "SIGBUS: a bus error (a truncated mapped file, bad alignment)";
  case 143:
    return "SIGTERM: stopped by its launcher (often after another rank failed)";
  case 1:
    return "an ordinary error exit (a Python exception)";
  default:
    break;
  }
  if (status > 128 && status < 192) {
    return "killed by a signal (status - 128)";
  }
  return "a non-zero exit";
}

} // namespace rocplay::crash
