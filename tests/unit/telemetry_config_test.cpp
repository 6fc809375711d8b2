// [metrics] and [notify]: off by default, and every bad value named with its position.
#include <gtest/gtest.h>

#include "checks/registry.hpp"
#include "config/config.hpp"
#include "runtime/logging.hpp"

#include <cstdlib>
#include <sys/stat.h>
#include <unistd.h>

using namespace ar::healthd;

TEST(TelemetryConfig, OffByDefault) {
  auto c = parse_config("", "t.toml");
  ASSERT_TRUE(c) << c.error();
  EXPECT_TRUE(c->metrics.listen.empty());
  EXPECT_TRUE(c->metrics.textfile.empty());
  EXPECT_TRUE(c->notify.webhook_url.empty());
  EXPECT_TRUE(c->notify.webhook_url_file.empty());
}

TEST(TelemetryConfig, KeysAreRead) {
  auto c = parse_config(R"([metrics]
listen = "127.0.0.1:9464"
textfile = "/var/lib/prometheus/node-exporter/healthd.prom"
textfile_interval_s = 30
[notify]
webhook_url = "https://hooks.example.com/services/T000/B000/XXXX"
on = ["drain", "admin", "drain"]
timeout_ms = 2000
attempts = 2
)",
                        "t.toml");
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->metrics.listen, "127.0.0.1:9464");
  EXPECT_EQ(c->metrics.textfile_interval.count(), 30);
  EXPECT_EQ(c->notify.on, (std::vector<NoticeKind>{NoticeKind::drain, NoticeKind::admin}));
  EXPECT_EQ(c->notify.timeout.count(), 2000);
  EXPECT_EQ(c->notify.attempts, 2u);
  // --check-config shows that a webhook is set, never the URL (its path is a Slack hook's secret).
  bool shown = false;
  for (const auto& v : describe_config(*c)) {
    if (v.key != "notify.webhook_url") continue;
    EXPECT_TRUE(v.value.starts_with("\"(secret ")) << v.value;
    EXPECT_EQ(v.value.find("hooks.example.com"), std::string::npos);
    shown = true;
  }
  EXPECT_TRUE(shown);
  // Another URL shows another fingerprint: a reload sees that the webhook changed.
  auto other = parse_config("[notify]\nwebhook_url = \"https://hooks.example.com/services/T000/B000/YYYY\"\n", "t.toml");
  ASSERT_TRUE(other);
  std::string a, b;
  for (const auto& v : describe_config(*c)) if (v.key == "notify.webhook_url") a = v.value;
  for (const auto& v : describe_config(*other)) if (v.key == "notify.webhook_url") b = v.value;
  EXPECT_NE(a, b);
}

TEST(TelemetryConfig, BadValuesAreNamedWithTheirPosition) {
  const std::pair<const char*, const char*> bad[] = {
      {"[metrics]\nlisten = \"9464\"\n", "t.toml:2:10: key 'listen' in [metrics]"},
      {"[metrics]\nlisten = \"127.0.0.1:99999\"\n", "IPV4:PORT"},
      {"[metrics]\nlisten = \"bad host:80\"\n", "IPV4:PORT"},
      {"[metrics]\nlisten = \"999.1.1.1:80\"\n", "IPV4:PORT"},
      {"[metrics]\nlisten = \"[::1]:9464\"\n", "IPV4:PORT"},
      {"[metrics]\nlisten = \"1.2.3:80\"\n", "IPV4:PORT"},
      {"[metrics]\ntextfile = \"relative.prom\"\n", "textfile"},
      {"[notify]\nwebhook_url = \"ftp://x\"\n", "http"},
      {"[notify]\nwebhook_url = \"https://x/a b\"\n", "spaces"},
      {"[notify]\non = [\"drained\"]\n", "requeue"},
      {"[notify]\nattempts = 0\n", "attempts"},
      {"[notify]\nwebhook_url = \"https://x\"\nwebhook_url_file = \"/etc/healthd/url\"\n", "set one"},
      {"[metric]\n", "did you mean"},
  };
  for (const auto& [text, wanted] : bad) {
    auto c = parse_config(text, "t.toml");
    ASSERT_FALSE(c) << text;
    EXPECT_NE(c.error().find(wanted), std::string::npos) << text << " -> " << c.error();
  }
}

TEST(Logging, TheJournalOnlyWhenStderrIsTheStreamSystemdNamed) {
  struct stat st{};
  ASSERT_EQ(::fstat(STDERR_FILENO, &st), 0);
  const std::string own = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  ::setenv("JOURNAL_STREAM", own.c_str(), 1);
  EXPECT_EQ(detect_log_target(), LogTarget::journal);
  // stderr redirected since systemd started the process (a wrapper, `healthd 2>file`): not the journal.
  ::setenv("JOURNAL_STREAM", (std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino + 1)).c_str(), 1);
  EXPECT_EQ(detect_log_target(), LogTarget::stderr_text);
  ::setenv("JOURNAL_STREAM", "garbage", 1);
  EXPECT_EQ(detect_log_target(), LogTarget::stderr_text);
  ::unsetenv("JOURNAL_STREAM");
  EXPECT_EQ(detect_log_target(), LogTarget::stderr_text);
}
