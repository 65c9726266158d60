// Collecting the machine report and the rules of its advice (see machine_report.h).
#include "monitor/machine_report.h"

#include <sys/resource.h>
#include <sys/utsname.h>

#include <cstdlib>
#include <sstream>

#include "allocator/config.h"
#include "common/error.h"
#include "common/format.h"
#include "common/json_writer.h"
#include "monitor/proc_files.h"

namespace frugal::monitor {

namespace {

std::int64_t rlimit_bytes(rlim_t value) {
  return value == RLIM_INFINITY ? -1 : static_cast<std::int64_t>(value);
}

// cgroup v2 memory.max or v1 memory.limit_in_bytes of this process's group; "max" or a
// value near 2^63 means no limit.
std::int64_t cgroup_memory_limit() {
  std::vector<std::string> candidates;
  if (const auto groups = read_text_file("/proc/self/cgroup")) {
    std::istringstream lines(*groups);
    std::string line;
    while (std::getline(lines, line)) {
      const std::size_t first = line.find(':'), second = line.find(':', first + 1);
      if (first == std::string::npos || second == std::string::npos) continue;
      const std::string controllers = line.substr(first + 1, second - first - 1);
      const std::string path = line.substr(second + 1);
      if (controllers.empty()) candidates.push_back("/sys/fs/cgroup" + path + "/memory.max");
      if (controllers == "memory")
        candidates.push_back("/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes");
    }
  }
  // Inside a container the group's own directory is usually mounted as the root.
  candidates.push_back("/sys/fs/cgroup/memory.max");
  candidates.push_back("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  for (const std::string& path : candidates) {
    const auto text = read_text_file(path);
    if (!text) continue;
    if (text->starts_with("max")) return -1;
    const long long value = std::atoll(text->c_str());
    return value <= 0 || value >= (std::int64_t{1} << 62) ? -1 : value;
  }
  return -1;
}

// The bracketed choice of /sys/kernel/mm/transparent_hugepage/enabled.
std::string transparent_hugepages() {
  const auto text = read_text_file("/sys/kernel/mm/transparent_hugepage/enabled");
  if (!text) return "";
  const std::size_t open = text->find('['), close = text->find(']');
  return open == std::string::npos || close == std::string::npos
             ? ""
             : text->substr(open + 1, close - open - 1);
}

std::string bytes_or_unlimited(std::int64_t bytes) {
  return bytes < 0 ? "unlimited" : format_bytes(bytes);
}

std::string units_text(const VectorUnits& v) {
  std::string text;
  auto add = [&](bool on, const char* name) {
    if (on) text += std::string(text.empty() ? "" : " ") + name;
  };
  add(v.avx2, "avx2");
  add(v.fma, "fma");
  add(v.f16c, "f16c");
  add(v.avx512f, "avx512f");
  add(v.avx512bw, "avx512bw");
  add(v.avx512_bf16, "avx512_bf16");
  add(v.avx512_fp16, "avx512_fp16");
  add(v.amx_tile, "amx_tile");
  add(v.amx_bf16, "amx_bf16");
  return text.empty() ? "none" : text;
}

std::string units_json(const VectorUnits& v) {
  JsonWriter j;
  j.field("avx2", v.avx2);
  j.field("fma", v.fma);
  j.field("f16c", v.f16c);
  j.field("avx512f", v.avx512f);
  j.field("avx512bw", v.avx512bw);
  j.field("avx512_bf16", v.avx512_bf16);
  j.field("avx512_fp16", v.avx512_fp16);
  j.field("amx_tile", v.amx_tile);
  j.field("amx_bf16", v.amx_bf16);
  return j.str();
}

}  // namespace

const char* level_name(Advice::Level level) {
  switch (level) {
    case Advice::Level::kNote:
      return "note";
    case Advice::Level::kWarning:
      return "warning";
    case Advice::Level::kError:
      return "error";
  }
  return "?";
}

MachineReport collect_machine_report() {
  MachineReport r;
  utsname names{};
  if (::uname(&names) == 0) {
    r.host = names.nodename;
    r.kernel = std::string(names.sysname) + " " + names.release + " " + names.machine;
  }
  r.memory = system_memory();
  r.cgroup_memory_limit = cgroup_memory_limit();
  rlimit limit{};
  if (::getrlimit(RLIMIT_MEMLOCK, &limit) == 0) {
    r.memlock_soft = rlimit_bytes(limit.rlim_cur);
    r.memlock_hard = rlimit_bytes(limit.rlim_max);
  }
  r.transparent_hugepages = transparent_hugepages();
  r.cpu = cpu_info();
  // No allocator of any device is created just to look: the doctor must not take memory.
  try {
    r.devices = device_view(-1, /*with_allocator=*/false);
  } catch (const Error& e) {
    r.devices.unavailable_reason = e.what();
  }
  if (const char* conf = std::getenv("FRUGAL_ALLOC_CONF")) {
    r.alloc_conf_set = true;
    r.alloc_conf_env = conf;
  }
  try {
    r.alloc_conf_parsed = alloc::AllocatorConfig::from_environment().to_string();
  } catch (const Error& e) {
    r.alloc_conf_error = e.what();
  }
  return r;
}

std::vector<Advice> advise(const MachineReport& r, const AdviceThresholds& t) {
  using L = Advice::Level;
  std::vector<Advice> out;
  auto add = [&](L level, const char* topic, std::string text) {
    out.push_back({level, topic, std::move(text)});
  };

  // Memory: what happens when a step needs more than there is.
  const std::int64_t ram =
      r.cgroup_memory_limit > 0 && (r.memory.total < 0 || r.cgroup_memory_limit < r.memory.total)
          ? r.cgroup_memory_limit
          : r.memory.total;
  if (r.memory.swap_total == 0 && ram >= 0 && ram < t.little_ram)
    add(L::kWarning, "swap",
        "no swap and only " + format_bytes(ram) +
            " of RAM: a step that needs more is killed by the OOM killer at once, with nothing to "
            "slow down into; "
            "add a swap file or find the batch size that fits (frugal-train --auto-batch-size)");
  else if (r.memory.swap_total == 0)
    add(L::kNote, "swap",
        "no swap: exceeding RAM ends the process (OOM killer) rather than slowing it down");
  if (r.memory.total > 0 && r.memory.available >= 0 &&
      static_cast<double>(r.memory.available) <
          t.low_available_fraction * static_cast<double>(r.memory.total))
    add(L::kWarning, "memory",
        "only " + format_bytes(r.memory.available) + " of " + format_bytes(r.memory.total) +
            " RAM is available: other processes hold the rest");
  if (r.cgroup_memory_limit > 0 && r.memory.total > 0 && r.cgroup_memory_limit < r.memory.total)
    add(L::kWarning, "container",
        "this process's cgroup is limited to " + format_bytes(r.cgroup_memory_limit) +
            " although the machine has " + format_bytes(r.memory.total) +
            ": plan batch sizes by the limit, past it the OOM killer acts");
  if (r.transparent_hugepages == "never")
    add(L::kWarning, "hugepages",
        "transparent huge pages are off (never): the host allocator's large segments fault in 4 "
        "KiB pages, about "
        "12 us each on first touch (enable madvise: /sys/kernel/mm/transparent_hugepage/enabled)");

  // Pinned memory: locked with mlock where there is no CUDA device, so RLIMIT_MEMLOCK caps it.
  if (r.memlock_soft >= 0 && r.memlock_soft < t.pinned_memory_wanted) {
    if (r.devices.available())
      add(L::kNote, "memlock",
          "RLIMIT_MEMLOCK is " + format_bytes(r.memlock_soft) +
              "; pinned buffers come from cudaHostAlloc here, which this limit does not cap");
    else
      add(L::kWarning, "memlock",
          "RLIMIT_MEMLOCK is " + format_bytes(r.memlock_soft) + ", below the " +
              format_bytes(t.pinned_memory_wanted) +
              " a few pinned batches of real images take (64 RGB images of 224x224 in float32 are "
              "37 MiB): "
              "without CUDA pinned memory is mlock'd, and past the limit it "
              "falls back to pageable memory (raise it: ulimit -l unlimited, or LimitMEMLOCK= in "
              "systemd, "
              "--ulimit memlock=-1 in docker)");
  }

  // CPU: the kernels' speed depends on the vector units they run with.
  const VectorUnits& cpu = r.cpu.cpu;
  const VectorUnits& build = r.cpu.build;
  if (!cpu.avx2)
    add(L::kWarning, "cpu",
        "no AVX2: frugal's kernels fall back to scalar loops, training is several times slower");
  if (r.cpu.kernels_level_error) {  // an impossible FRUGAL_CPU_ISA, in any build
    add(L::kError, "cpu", r.cpu.kernels_description + " (every kernel call will fail)");
  } else if (r.cpu.kernels_dispatch) {
    if (r.cpu.kernels_level != r.cpu.kernels_best)
      add(L::kNote, "cpu",
          "kernels run at " + r.cpu.kernels_description + ", below the " + r.cpu.kernels_best +
              " this CPU supports: unset FRUGAL_CPU_ISA unless comparing levels");
  } else if ((cpu.avx2 && !build.avx2) || (cpu.avx512f && !build.avx512f)) {
    add(L::kWarning, "cpu",
        "this build does not use all the vector units the CPU has (CPU: " + units_text(cpu) +
            "; build: " + units_text(build) +
            "): use the default portable build (it picks kernels at run time) or rebuild on this "
            "machine with -DFRUGAL_NATIVE=ON");
  }
  if (!cpu.avx512_bf16)
    add(L::kNote, "amp",
        "no AVX512_BF16: --amp bf16 on the CPU converts to and from bfloat16 without hardware "
        "help, so it saves "
        "activation memory but runs slower than float32");
  if (!cpu.f16c)
    add(L::kNote, "amp", "no F16C: float16 conversions on the CPU are done in software");
  if (r.cpu.usable_cores > 0 && r.cpu.usable_cores < r.cpu.logical_cores)
    add(L::kNote, "cpu",
        "this process may use " + std::to_string(r.cpu.usable_cores) + " of the " +
            std::to_string(r.cpu.logical_cores) +
            " cores (affinity or cpuset); frugal's threads default to those");

  // CUDA devices.
  if (!r.devices.available())
    add(L::kNote, "cuda",
        "training runs on the CPU; --device cuda is refused: " + r.devices.unavailable_reason);
  for (const DeviceMemory& d : r.devices.devices)
    if (d.total > 0 &&
        static_cast<double>(d.free) < t.low_device_free_fraction * static_cast<double>(d.total))
      add(L::kWarning, "cuda",
          "cuda:" + std::to_string(d.index) + " has only " + format_bytes(d.free) + " free of " +
              format_bytes(d.total) + ": other processes use it (nvidia-smi lists them)");

  if (!r.alloc_conf_error.empty())
    add(L::kError, "allocator", "FRUGAL_ALLOC_CONF cannot be used: " + r.alloc_conf_error);
  return out;
}

std::string report_text(const MachineReport& r, const std::vector<Advice>& advice) {
  std::ostringstream out;
  auto line = [&](const std::string& name, const std::string& value) {
    out << "  " << name << std::string(name.size() < 22 ? 22 - name.size() : 1, ' ') << value
        << "\n";
  };
  out << "machine\n";
  line("host", r.host + " (" + r.kernel + ")");
  out << "memory\n";
  line("RAM total", format_bytes(r.memory.total));
  line("RAM available", format_bytes(r.memory.available));
  line("swap",
       format_bytes(r.memory.swap_total) + " total, " + format_bytes(r.memory.swap_free) + " free");
  line("container limit", bytes_or_unlimited(r.cgroup_memory_limit));
  line("memlock limit",
       bytes_or_unlimited(r.memlock_soft) + " (hard " + bytes_or_unlimited(r.memlock_hard) + ")");
  line("transparent hugepages",
       r.transparent_hugepages.empty() ? "unknown" : r.transparent_hugepages);
  out << "cpu\n";
  line("model", r.cpu.model);
  line("cores", std::to_string(r.cpu.logical_cores) + " logical, " +
                    std::to_string(r.cpu.usable_cores) + " usable");
  line("vector units", units_text(r.cpu.cpu));
  line("build uses", units_text(r.cpu.build));
  line("kernels", r.cpu.kernels_description);
  out << "cuda\n";
  line("built with CUDA", r.devices.cuda_built ? "yes" : "no");
  if (r.devices.available()) {
    std::istringstream devices(r.devices.str());
    std::string device;
    while (std::getline(devices, device)) line("device", device);
  } else {
    line("devices", "none: " + r.devices.unavailable_reason);
  }
  out << "allocator\n";
  line("FRUGAL_ALLOC_CONF", r.alloc_conf_set ? "'" + r.alloc_conf_env + "'" : "(unset)");
  if (r.alloc_conf_error.empty())
    line("in effect", r.alloc_conf_parsed);
  else
    line("error", r.alloc_conf_error);
  out << "advice\n";
  if (advice.empty()) out << "  nothing to report\n";
  for (const Advice& a : advice)
    out << "  " << level_name(a.level) << " [" << a.topic << "]: " << a.text << "\n";
  return out.str();
}

std::string report_json(const MachineReport& r, const std::vector<Advice>& advice) {
  JsonWriter memory;
  memory.field("total_bytes", r.memory.total);
  memory.field("available_bytes", r.memory.available);
  memory.field("swap_total_bytes", r.memory.swap_total);
  memory.field("swap_free_bytes", r.memory.swap_free);
  memory.field("cgroup_limit_bytes", r.cgroup_memory_limit);
  memory.field("memlock_soft_bytes", r.memlock_soft);
  memory.field("memlock_hard_bytes", r.memlock_hard);
  memory.field("transparent_hugepages", r.transparent_hugepages);
  JsonWriter cpu;
  cpu.field("model", r.cpu.model);
  cpu.field("logical_cores", static_cast<std::int64_t>(r.cpu.logical_cores));
  cpu.field("usable_cores", static_cast<std::int64_t>(r.cpu.usable_cores));
  cpu.raw("vector_units", units_json(r.cpu.cpu));
  cpu.raw("build_uses", units_json(r.cpu.build));
  cpu.field("kernels_dispatch", r.cpu.kernels_dispatch);
  cpu.field("cpu_isa", r.cpu.kernels_level);
  cpu.field("cpu_isa_best", r.cpu.kernels_best);
  cpu.field("cpu_isa_description", r.cpu.kernels_description);
  JsonWriter allocator;
  allocator.field("env_set", r.alloc_conf_set);
  allocator.field("env", r.alloc_conf_env);
  allocator.field("parsed", r.alloc_conf_parsed);
  allocator.field("error", r.alloc_conf_error);
  std::vector<std::string> items;
  for (const Advice& a : advice) {
    JsonWriter item;
    item.field("level", level_name(a.level));
    item.field("topic", a.topic);
    item.field("text", a.text);
    items.push_back(item.str());
  }
  JsonWriter j;
  j.field("host", r.host);
  j.field("kernel", r.kernel);
  j.raw("memory", memory.str());
  j.raw("cpu", cpu.str());
  j.raw("cuda", r.devices.json());
  j.raw("allocator", allocator.str());
  j.raw("advice", JsonWriter::array(items));
  return j.str();
}

}  // namespace frugal::monitor
