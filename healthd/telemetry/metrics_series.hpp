// The two rules every healthd metric family keeps (telemetry/metrics.cpp):
//   - bounded cardinality: label values come from outside (fault codes of admin scripts, XID numbers
//     from kernel-log lines, device names from sysfs), so a family holds at most kMaxSeries label
//     sets; a counter's label set past that is counted under "other", a gauge's is left out, and
//     both are counted in healthd_metrics_label_overflow_total{family};
//   - no stale series: a gauge that describes the node now (a check's status, a GPU's health) is
//     rebuilt from each status, and a label set that is no longer there (a check gone after a reload,
//     a GPU gone) is removed, not left at its last value.
// Not thread-safe: the caller (Metrics) holds its own mutex; prometheus-cpp's families lock their own
// maps against a scrape.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include <prometheus/detail/builder.h>
#include <prometheus/family.h>
#include <prometheus/labels.h>
#include <prometheus/registry.h>

#include "text/text.hpp"

namespace ar::healthd {

inline constexpr std::size_t kMaxSeries = 256;
// A label value longer than this is cut: a dashboard legend, not a log line.
inline constexpr std::size_t kMaxLabelValue = 128;

// Outside text as a label value: valid UTF-8 without control characters (the exposition format and
// promtool want UTF-8), and short.
inline std::string label_value(std::string_view text) { return sanitize(text, kMaxLabelValue); }

// Called with a family's name for a label set past the cap: a counter's at each use of "other", a
// gauge's once per label set left out.
using OverflowCounter = std::function<void(const std::string& family)>;

template <class T>
prometheus::Family<T>& family_in(prometheus::Registry& registry, const std::string& name, const std::string& help) {
  return prometheus::detail::Builder<T>().Name(name).Help(help).Register(registry);
}

// A counter-like family (counters, histograms): a label set once seen stays (counters only grow), up
// to kMaxSeries of them; later new ones all go to one more series, "other" in every label.
template <class T>
class CappedFamily {
 public:
  CappedFamily(prometheus::Registry& registry, std::string name, const std::string& help, OverflowCounter overflow)
      : family_(&family_in<T>(registry, name, help)), name_(std::move(name)), overflow_(std::move(overflow)) {}

  // The series of `labels` (or of "other"); `args` as Family::Add takes them (a histogram's buckets).
  template <class... Args>
  T& at(prometheus::Labels labels, Args&&... args) {
    auto it = seen_.find(labels);
    if (it != seen_.end()) return *it->second;
    if (seen_.size() >= kMaxSeries) {
      if (overflow_) overflow_(name_);
      for (auto& [key, value] : labels) value = "other";
      if (other_ == nullptr) other_ = &family_->Add(labels, std::forward<Args>(args)...);
      return *other_;
    }
    return *seen_.emplace(labels, &family_->Add(labels, std::forward<Args>(args)...)).first->second;
  }

 private:
  prometheus::Family<T>* family_;
  std::string name_;
  OverflowCounter overflow_;
  std::map<prometheus::Labels, T*> seen_;  // never removed: a counter only grows
  T* other_ = nullptr;
};

// A gauge family rebuilt from each status: begin(), set() (or at()) each label set present now, end()
// removes the ones not touched since begin().
template <class T>
class SnapshotFamily {
 public:
  // `max_series`: a family with several series per thing (one per status of a check) holds more.
  SnapshotFamily(prometheus::Registry& registry, std::string name, const std::string& help, OverflowCounter overflow,
                 std::size_t max_series = kMaxSeries)
      : family_(&family_in<T>(registry, name, help)),
        name_(std::move(name)),
        overflow_(std::move(overflow)),
        max_series_(max_series) {}

  void begin() { fresh_.clear(); }
  // Null when the family is full (the set is left out, and counted).
  T* at(const prometheus::Labels& labels) {
    auto it = live_.find(labels);
    if (it == live_.end()) {
      if (live_.size() >= max_series_) {
        // Counted once per label set left out, not at every status that still has it (a bounded
        // memory of them: past it, a set may be counted again).
        if (left_out_.size() >= 16 * max_series_) left_out_.clear();
        if (left_out_.insert(labels).second && overflow_) overflow_(name_);
        return nullptr;
      }
      it = live_.emplace(labels, &family_->Add(labels)).first;
    }
    fresh_.insert(labels);
    return it->second;
  }
  void set(const prometheus::Labels& labels, double value) {
    if (auto* g = at(labels)) g->Set(value);
  }
  void end() {
    for (auto it = live_.begin(); it != live_.end();) {
      if (fresh_.contains(it->first)) {
        ++it;
        continue;
      }
      family_->Remove(it->second);
      it = live_.erase(it);
    }
  }
  // The label sets present now (as of the last end()).
  std::set<prometheus::Labels> labels() const {
    std::set<prometheus::Labels> out;
    for (const auto& [l, _] : live_) out.insert(l);
    return out;
  }

 private:
  prometheus::Family<T>* family_;
  std::string name_;
  OverflowCounter overflow_;
  std::size_t max_series_;
  std::map<prometheus::Labels, T*> live_;
  std::set<prometheus::Labels> fresh_;
  std::set<prometheus::Labels> left_out_;
};

}  // namespace ar::healthd
