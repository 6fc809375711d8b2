#include "profiles.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include <toml++/toml.h>

namespace ar::healthd {

namespace {
// Sources: the AWS EC2 instance-type specifications (vCPUs, memory, accelerators, network cards),
// the EFA user guide (P5/P5e: up to 32 network cards, one EFA each), NVIDIA's NVLink figures (A100
// SXM4: 12 links per GPU, H100/H200 SXM5: 18). EFA counts assume one EFA per network card on the types
// that support EFA; a cluster attaching fewer sets [checks.efa] expected_devices.
constexpr const char* kEc2 = "AWS EC2 instance type specifications";

InstanceProfile p(std::string name, std::uint32_t gpus, std::uint32_t nvlinks, std::uint32_t neuron, std::uint32_t efa,
                  std::uint32_t cpus, double mem, std::string source = kEc2) {
  return {std::move(name), gpus, nvlinks, neuron, efa, cpus, mem, std::move(source)};
}
}  // namespace

const std::vector<InstanceProfile>& builtin_profiles() {
  static const std::vector<InstanceProfile> profiles = {
      //  name              gpus nvl neuron efa cpus  memory
      p("p4d.24xlarge",      8,  12,  0,    4,  96,  1152, "AWS EC2 P4d specifications (8x A100 40GB, 4x100 Gbps EFA); NVLink3: 12 links/GPU"),
      p("p5.48xlarge",       8,  18,  0,   32, 192,  2048, "AWS EC2 P5 specifications and EFA user guide (32 network cards); NVLink4: 18 links/GPU"),
      p("p5e.48xlarge",      8,  18,  0,   32, 192,  2048, "AWS EC2 P5e specifications and EFA user guide (32 network cards); NVLink4: 18 links/GPU"),
      p("p5en.48xlarge",     8,  18,  0,   16, 192,  2048, "AWS EC2 P5en specifications (16 EFAv3 network cards); NVLink4: 18 links/GPU"),
      p("g5.xlarge",         1,   0,  0,    0,   4,    16),
      p("g5.2xlarge",        1,   0,  0,    0,   8,    32),
      p("g5.4xlarge",        1,   0,  0,    0,  16,    64),
      p("g5.8xlarge",        1,   0,  0,    1,  32,   128),
      p("g5.12xlarge",       4,   0,  0,    1,  48,   192),
      p("g5.16xlarge",       1,   0,  0,    1,  64,   256),
      p("g5.24xlarge",       4,   0,  0,    1,  96,   384),
      p("g5.48xlarge",       8,   0,  0,    1, 192,   768),
      p("g6.xlarge",         1,   0,  0,    0,   4,    16),
      p("g6.2xlarge",        1,   0,  0,    0,   8,    32),
      p("g6.4xlarge",        1,   0,  0,    0,  16,    64),
      p("g6.8xlarge",        1,   0,  0,    1,  32,   128),
      p("g6.12xlarge",       4,   0,  0,    1,  48,   192),
      p("g6.16xlarge",       1,   0,  0,    1,  64,   256),
      p("g6.24xlarge",       4,   0,  0,    1,  96,   384),
      p("g6.48xlarge",       8,   0,  0,    1, 192,   768),
      p("trn1.2xlarge",      0,   0,  1,    0,   8,    32),
      p("trn1.32xlarge",     0,   0, 16,    8, 128,   512, "AWS EC2 Trn1 specifications (16 Trainium, 8 EFA, 800 Gbps)"),
      p("trn1n.32xlarge",    0,   0, 16,   16, 128,   512, "AWS EC2 Trn1n specifications (16 Trainium, 16 EFA, 1600 Gbps)"),
      p("trn2.48xlarge",     0,   0, 16,   16, 192,  2048, "AWS EC2 Trn2 specifications (16 Trainium2, 16 EFAv3, 3.2 Tbps)"),
      p("inf2.xlarge",       0,   0,  1,    0,   4,    16),
      p("inf2.8xlarge",      0,   0,  1,    0,  32,   128),
      p("inf2.24xlarge",     0,   0,  6,    0,  96,   384),
      p("inf2.48xlarge",     0,   0, 12,    0, 192,   768),
  };
  return profiles;
}

namespace {
std::string profile_where(const std::string& source, const toml::source_region& r) {
  return source + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column);
}
}  // namespace

std::expected<std::vector<InstanceProfile>, std::string> parse_profiles(std::string_view text, const std::string& source) {
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return std::unexpected(profile_where(source, e.source()) + ": " + std::string(e.description()));
  }
  std::vector<InstanceProfile> out;
  for (const auto& [top_key, top] : root) {
    if (top_key.str() != "profile" || !top.is_table())
      return std::unexpected(profile_where(source, top_key.source()) + ": unknown key '" + std::string(top_key.str()) +
                             "' (a profile file holds [profile.\"<instance type>\"] tables)");
    for (const auto& [name_key, node] : *top.as_table()) {
      const auto* t = node.as_table();
      if (t == nullptr)
        return std::unexpected(profile_where(source, name_key.source()) + ": profile '" + std::string(name_key.str()) + "' must be a table");
      InstanceProfile prof;
      prof.name = std::string(name_key.str());
      prof.source = source;
      for (const auto& [k, v] : *t) {
        const std::string key(k.str());
        auto fail = [&](const std::string& what) {
          return std::unexpected(profile_where(source, k.source()) + ": key '" + key + "' in profile '" + prof.name + "' " + what);
        };
        if (key == "source") {
          if (!v.is_string()) return fail("must be a string");
          prof.source = *v.value<std::string>();
        } else if (key == "memory_gib") {
          // Written so that nan fails too; inf would expect infinite memory.
          if (!v.is_number() || !(*v.value<double>() >= 0 && *v.value<double>() <= 1e9))
            return fail("must be a number of GiB, at least 0");
          prof.memory_gib = *v.value<double>();
        } else if (key == "gpus" || key == "nvlinks_per_gpu" || key == "neuron_devices" || key == "efa_devices" || key == "cpus") {
          if (!v.is_integer() || *v.value<std::int64_t>() < 0 || *v.value<std::int64_t>() > 100000)
            return fail("must be an integer between 0 and 100000");
          auto n = static_cast<std::uint32_t>(*v.value<std::int64_t>());
          (key == "gpus"              ? prof.gpus
           : key == "nvlinks_per_gpu" ? prof.nvlinks_per_gpu
           : key == "neuron_devices"  ? prof.neuron_devices
           : key == "efa_devices"     ? prof.efa_devices
                                      : prof.cpus) = n;
        } else {
          return std::unexpected(profile_where(source, k.source()) + ": unknown key '" + key + "' in profile '" + prof.name +
                                 "' (known: cpus, efa_devices, gpus, memory_gib, neuron_devices, nvlinks_per_gpu, source)");
        }
      }
      out.push_back(std::move(prof));
    }
  }
  return out;
}

std::expected<InstanceProfile, ProfileError> resolve_profile(const std::string& name, const std::filesystem::path& profile_dir) {
  if (name == "auto")
    return std::unexpected(ProfileError{"instance_type \"auto\" needs the EC2 instance metadata, which is not wired yet"});
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(profile_dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".toml") files.push_back(it->path());
  std::sort(files.begin(), files.end());  // a later file wins over an earlier one
  std::optional<InstanceProfile> found;
  for (const auto& f : files) {
    std::ifstream in(f);
    if (!in) return std::unexpected(ProfileError{f.string() + ": cannot open: " + std::strerror(errno), true});
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = parse_profiles(text.str(), f.string());
    if (!parsed) return std::unexpected(ProfileError{parsed.error(), true});
    for (auto& prof : *parsed)
      if (prof.name == name) found = std::move(prof);
  }
  if (found) return *found;
  for (const auto& prof : builtin_profiles())
    if (prof.name == name) return prof;
  return std::unexpected(ProfileError{"unknown instance type '" + name + "': no built-in profile and none in " + profile_dir.string()});
}

void apply_profile(Config& config, const InstanceProfile& profile) {
  for (auto& [name, settings] : config.checks) settings->apply_profile(profile);
}

}  // namespace ar::healthd
