// Human-readable rendering of daemon replies for healthctl. Pure functions of the reply's data and
// the render options (terminal width, long form, colour, "now", user names): tested on JSON values.
// A reply of another shape (another version of healthd) prints what it can: missing or mistyped
// fields show as "?" or "-", never as an exception. Every text from the reply is made printable.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "render_options.hpp"

namespace ar::healthctl {

std::string format_ping(const nlohmann::json& data);

// The daemon, the node's verdict and a line per check result (one per active fault of a check that
// lists them, as the kernel-log check does), fitted to the width unless in the long form.
std::string format_status(const nlohmann::json& data, const RenderOptions& o = {});

// The per-GPU table of the status reply's health.gpus.
std::string format_gpus(const nlohmann::json& status_data, const RenderOptions& o = {});

std::string format_jobs(const nlohmann::json& data, const RenderOptions& o = {});
std::string format_explain(const nlohmann::json& data, const RenderOptions& o = {});
std::string format_events(const nlohmann::json& data, const RenderOptions& o = {});

// A result that says its check does not apply here (no such hardware, nothing expected):
// "applicable": false, detail.applicable == false, or a message starting "not applicable".
bool is_not_applicable(const nlohmann::json& result);

}  // namespace ar::healthctl
