#include <fstream>

#include <sys/socket.h>
#include <sys/un.h>

#include <gtest/gtest.h>

#include "auto_resume/unix_client.hpp"
#include "daemon_fixture.hpp"

using namespace std::chrono_literals;
namespace proto = ar::proto;

namespace {

std::string raw_exchange(const std::string& path, const std::string& bytes) {
  auto deadline = ar::UnixClient::Clock::now() + 3s;
  auto c = ar::UnixClient::connect(path, deadline);
  if (!c) return "connect failed: " + c.error();
  auto line = c->request(bytes, deadline);
  return line ? *line : "error: " + line.error();
}

std::string error_code(const std::string& reply_line) {
  auto r = proto::parse_reply(reply_line);
  return r ? "ok" : r.error().code;
}

}  // namespace

TEST(SocketServer, AnswersPingAndRecordsSteps) {
  ar::test::RunningDaemon d;
  auto pong = ar::call(d.socket_path, proto::to_json(proto::Request{proto::Ping{}}), 2s);
  ASSERT_TRUE(pong) << pong.error();
  EXPECT_EQ((*pong)["node"], "n1");

  auto r = ar::call(d.socket_path, proto::to_json(proto::Request{proto::StepStart{11, 0, "n1", 0, true, 0}}), 2s);
  ASSERT_TRUE(r) << r.error();
  auto jobs = ar::call(d.socket_path, proto::to_json(proto::Request{proto::JobsQuery{}}), 2s);
  ASSERT_TRUE(jobs) << jobs.error();
  ASSERT_EQ((*jobs)["jobs"].size(), 1u);
  EXPECT_EQ((*jobs)["jobs"][0]["job_id"], 11);
  EXPECT_EQ((*jobs)["jobs"][0]["auto_resume"], true);
}

TEST(SocketServer, EveryBadMessageGetsAnErrorReplyAndTheConnectionSurvives) {
  ar::test::RunningDaemon d;
  auto deadline = ar::UnixClient::Clock::now() + 5s;
  auto c = ar::UnixClient::connect(d.socket_path, deadline);
  ASSERT_TRUE(c) << c.error();
  for (auto [bytes, code] : std::vector<std::pair<std::string, std::string>>{
           {"{oops\n", proto::err::kMalformed},
           {"{\"v\":99,\"type\":\"ping\"}\n", proto::err::kBadVersion},
           {"{\"v\":1,\"type\":\"format_disk\"}\n", proto::err::kUnknownType},
           {"{\"v\":1,\"type\":\"step_end\",\"job_id\":1}\n", proto::err::kBadField},
           {"{\"v\":1,\"type\":\"ping\"}\n", "ok"}}) {
    auto line = c->request(bytes, deadline);
    ASSERT_TRUE(line) << line.error();
    EXPECT_EQ(error_code(*line), code) << bytes;
  }
}

TEST(SocketServer, OversizeMessageGetsTooLargeThenClose) {
  ar::test::RunningDaemon d;
  std::string huge(proto::kMaxMessageBytes + 100, 'x');
  auto line = raw_exchange(d.socket_path, huge);
  EXPECT_EQ(error_code(line), proto::err::kTooLarge) << line.substr(0, 200);
  // The daemon still serves others.
  EXPECT_TRUE(ar::call(d.socket_path, proto::to_json(proto::Request{proto::Ping{}}), 2s));
}

TEST(SocketServer, MessageForAnotherNodeIsRefused) {
  ar::test::RunningDaemon d("n1");
  auto r = ar::call(d.socket_path, proto::to_json(proto::Request{proto::StepStart{1, 0, "n2", 0, true, 0}}), 2s);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("n2"), std::string::npos) << r.error();
  EXPECT_TRUE(d.registry.jobs().empty());
}

TEST(SocketServer, SecondDaemonOnTheSameSocketIsRefused) {
  ar::test::RunningDaemon d;
  asio::io_context io;
  ar::healthd::SocketServer second(io, d.socket_path, d.handler);
  auto r = second.start();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("another daemon"), std::string::npos) << r.error();
  EXPECT_TRUE(ar::call(d.socket_path, proto::to_json(proto::Request{proto::Ping{}}), 2s));
}

TEST(SocketServer, StaleSocketFileIsReplaced) {
  ar::test::TempDir dir;
  auto path = (dir / "stale.sock").string();
  {
    // A socket file whose listener is gone, as a crashed daemon leaves it.
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ::close(fd);
  }
  ar::healthd::JobRegistry registry(dir / "jobs.json");
  ar::healthd::DaemonInfo info{"n1", "t", path, "", "", ar::healthd::WallClock::now()};
  ar::healthd::RequestHandler handler(info, registry, [] {});
  asio::io_context io;
  ar::healthd::SocketServer server(io, path, handler);
  ASSERT_TRUE(server.start());
}

TEST(SocketServer, RegularFileInTheWayIsNotDeleted) {
  ar::test::TempDir dir;
  auto path = dir / "not-a-socket";
  std::ofstream(path) << "precious";
  ar::healthd::JobRegistry registry(dir / "jobs.json");
  ar::healthd::DaemonInfo info{"n1", "t", path.string(), "", "", ar::healthd::WallClock::now()};
  ar::healthd::RequestHandler handler(info, registry, [] {});
  asio::io_context io;
  ar::healthd::SocketServer server(io, path, handler);
  EXPECT_FALSE(server.start());
  EXPECT_TRUE(std::filesystem::is_regular_file(path));
}
