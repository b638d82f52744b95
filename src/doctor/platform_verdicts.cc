#include "doctor/platform_verdicts.h"

#include <fmt/format.h>

#include <string>

namespace moetune {
namespace {

// Sources of the facts below (docs/platforms.md cites them again):
// - NVIDIA, "System Memory Fallback for Stable Diffusion"
//   (nvidia.custhelp.com/app/answers/detail/a_id/5490): since driver 536.40 the Windows driver
//   may use shared system memory when VRAM is exhausted; NVIDIA Control Panel > Manage 3D
//   Settings > "CUDA - Sysmem Fallback Policy" > "Prefer No Sysmem Fallback" turns it off,
//   globally or per program (the values: "Driver Default", "Prefer No Sysmem Fallback",
//   "Prefer Sysmem Fallback").
// - microsoft/WSL#11050 (open): a CUDA program in WSL 2 allocates beyond VRAM even with that
//   policy set, so the setting is reported not to reach WSL 2 programs.
// - NVIDIA, "CUDA on WSL User Guide" (docs.nvidia.com/cuda/wsl-user-guide): CUDA in WSL 2
//   runs on the Windows driver (no Linux driver is installed inside WSL; the toolkit is the
//   WSL-Ubuntu package); GPU support is for WSL 2 only.
// - Microsoft, "Advanced settings configuration in WSL" (learn.microsoft.com/windows/wsl/
//   wsl-config): the WSL 2 VM's memory is `memory=` in %UserProfile%\.wslconfig, by default
//   50% of Windows' memory. "Accessing network applications with WSL" (.../wsl/networking):
//   in NAT mode Windows is reached at the VM's default gateway, in mirrored mode at 127.0.0.1.

// The in-use signal on every platform (docs/watch.md, docs/method.md).
constexpr const char* kWatchRule =
    "in use, `moetune watch http://HOST:PORT` applies the rule that shows an overflow that does "
    "not fail, on any platform: time to first token growing with the conversation while "
    "generation speed stays normal";

std::string WslWhere(const Platform& p) {
  std::string where = p.evidence;
  if (!p.wsl_distro.empty() && where.find(p.wsl_distro) == std::string::npos)
    where += ", distribution " + p.wsl_distro;
  return where;
}

Verdict Wsl2Gpu(const Platform& p) {
  return MakeVerdict(
      std::string(PlatformFindingId(PlatformFinding::kWsl2Gpu)), 45,
      "WSL 2: the Windows NVIDIA driver may put what does not fit in VRAM in system memory "
      "without an error",
      fmt::format(
          "moetune runs under WSL 2 ({}), where the GPU is driven by the Windows driver. Since "
          "driver 536.40 that driver can place an allocation that does not fit in VRAM in "
          "shared system memory: a placement past the cliff then loads and runs several times "
          "slower instead of failing. On Windows its setting \"CUDA - Sysmem Fallback Policy\" "
          "= \"Prefer No Sysmem Fallback\" turns the overflow into a load failure (the cliff "
          "becomes an error), but WSL 2 programs are reported not to honour it "
          "(microsoft/WSL#11050), so under WSL 2 the margin moetune's plan keeps below free VRAM "
          "and tune's check of each placement at long context are the guard",
          WslWhere(p)),
      fmt::format(
          "keep the tuned --n-cpu-moe (it leaves a margin) and close programs that hold VRAM on "
          "Windows; for a Windows llama-server.exe set \"Prefer No Sysmem Fallback\" (NVIDIA "
          "Control Panel > Manage 3D settings > CUDA - Sysmem Fallback Policy); {}; the experts "
          "kept on the CPU live in the WSL 2 VM, whose memory is `memory=` in "
          "%UserProfile%\\.wslconfig (half of Windows' RAM by default)",
          kWatchRule));
}

Verdict Wsl2NoGpu(const Platform& p) {
  return MakeVerdict(
      std::string(PlatformFindingId(PlatformFinding::kWsl2NoGpu)), 20,
      "WSL 2 without an NVIDIA GPU in sight",
      fmt::format("moetune runs under WSL 2 ({}) and the NVIDIA driver lists no GPU; CUDA in WSL "
                  "2 comes from the Windows driver (libcuda and nvidia-smi appear in "
                  "/usr/lib/wsl/lib), never from a Linux driver installed inside WSL",
                  WslWhere(p)),
      "on a machine with an NVIDIA GPU: install or update the driver on Windows, run `wsl "
      "--update`, check `nvidia-smi` inside WSL, then rerun `moetune doctor`");
}

Verdict Wsl1NoGpu(const Platform& p) {
  return MakeVerdict(
      std::string(PlatformFindingId(PlatformFinding::kWsl1NoGpu)), 60,
      "WSL 1 gives Linux programs no GPU",
      fmt::format("moetune runs under WSL 1 ({}); GPU acceleration in WSL (CUDA on WSL) needs WSL "
                  "2, so a Linux llama.cpp here runs on the CPU only",
                  WslWhere(p)),
      "convert the distribution to WSL 2 (`wsl --set-version <distribution> 2` in PowerShell), "
      "then rerun `moetune doctor`");
}

Verdict WindowsEngine(const Platform& p) {
  return MakeVerdict(
      std::string(PlatformFindingId(PlatformFinding::kWindowsEngine)), 60,
      fmt::format("{} is a Windows llama.cpp, which moetune cannot run", p.engine_path),
      "moetune measures by starting llama-bench and llama-server with Linux paths and watching "
      "them through /proc; a Windows program started from WSL understands neither",
      fmt::format(
          "either build llama.cpp inside WSL 2 (cmake -B build -DGGML_CUDA=ON with NVIDIA's CUDA "
          "toolkit for WSL-Ubuntu: the same GPU through the same driver) and pass --llama-dir "
          "~/llama.cpp/build/bin, keeping the models on the Linux file system rather than "
          "/mnt/c; or keep the Windows llama.cpp: find its configuration with `moetune tune "
          "MODEL --ctx C --engine sim --machine ...` (`--spill silent` for a driver left at its "
          "default; or `moetune plan`), run it on Windows "
          "with `--emit powershell` or `--emit cmd`, set the driver's \"CUDA - Sysmem Fallback "
          "Policy\" to \"Prefer No Sysmem Fallback\" so that an overflow fails at load, and "
          "watch it from WSL (mirrored networking: http://127.0.0.1:PORT; NAT, the default: "
          "start llama-server with --host 0.0.0.0 and use Windows' address, the default gateway "
          "of `ip route show default`); {}",
          kWatchRule));
}

Verdict SharedMemoryGpu(const Platform& p) {
  return MakeVerdict(
      std::string(PlatformFindingId(PlatformFinding::kSharedMemoryGpu)), 30,
      fmt::format("the GPU shares the system's memory ({})", p.shared_memory_evidence),
      "on an NVIDIA Tegra (Jetson) board the GPU and the CPU use one memory: there is no PCIe "
      "copy and no VRAM cliff, and keeping experts on the CPU with --n-cpu-moe makes no room "
      "the way it does on a card with memory of its own; it only moves their work to the CPU "
      "cores",
      fmt::format("plan the model against the free RAM (`moetune plan MODEL --ctx C --vram "
                  "<free RAM>`) and prefer every layer on the GPU when it fits; {}",
                  kWatchRule));
}

}  // namespace

std::vector<Verdict> PlatformVerdicts(const Platform& platform, int nvidia_gpus) {
  std::vector<Verdict> out;
  for (const PlatformFinding f : PlatformFindings(platform, nvidia_gpus)) {
    switch (f) {
      case PlatformFinding::kWsl1NoGpu:
        out.push_back(Wsl1NoGpu(platform));
        break;
      case PlatformFinding::kWsl2Gpu:
        out.push_back(Wsl2Gpu(platform));
        break;
      case PlatformFinding::kWsl2NoGpu:
        out.push_back(Wsl2NoGpu(platform));
        break;
      case PlatformFinding::kWindowsEngine:
        out.push_back(WindowsEngine(platform));
        break;
      case PlatformFinding::kSharedMemoryGpu:
        out.push_back(SharedMemoryGpu(platform));
        break;
    }
  }
  return out;
}

}  // namespace moetune
