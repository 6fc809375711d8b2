// [checks.ec2]: EC2 maintenance events and spot interruption notices through IMDSv2 (see
// ec2_check.hpp). A notice makes healthd signal the auto-resume jobs here to checkpoint, then drain
// after checkpoint_grace.
#pragma once

#include <chrono>
#include <string>

#include "vocabulary/remedy.hpp"
#include "config/check_settings.hpp"

namespace ar::healthd {

struct Ec2Config : SettingsOf<Ec2Config> {
  static constexpr std::string_view kSection = "ec2";
  bool enabled = false;
  std::string endpoint = "http://169.254.169.254";  // %n: the node name (tests); also where
                                                    // [daemon] instance_type = "auto" asks
  std::chrono::seconds interval{5};
  std::chrono::milliseconds timeout{1000};          // one HTTP request
  Remedy action = Remedy::drain;
  // To every step, then the batch script (scancel). Empty (the default): none; a job without a
  // handler would die of a signal it did not ask for (bash and Python die of SIGUSR1).
  std::string checkpoint_signal;
  std::chrono::seconds checkpoint_grace{60};

  void expand_node(const std::string& node) override;
};

CheckSection ec2_section();

}  // namespace ar::healthd
