#include "web/listen_address.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "testing/test_util.h"

namespace profwatch::web {
namespace {

// A TCP socket listening on 127.0.0.1 at an ephemeral port, closed on exit.
class BusyPort {
 public:
  BusyPort() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(listen(fd_, 1), 0);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~BusyPort() { close(fd_); }
  std::string Address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(ListenAddressTest, AcceptsPortHostPortAndBracketedIpv6) {
  Result<ListenAddress> bare = ParseListenAddress("19474");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->host, "");
  EXPECT_EQ(bare->port, 19474);
  Result<ListenAddress> v4 = ParseListenAddress("0.0.0.0:0");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->host, "0.0.0.0");
  EXPECT_EQ(v4->port, 0);
  Result<ListenAddress> named = ParseListenAddress("localhost:65535");
  ASSERT_TRUE(named);
  EXPECT_EQ(named->host, "localhost");
  EXPECT_EQ(named->port, 65535);
  Result<ListenAddress> v6 = ParseListenAddress("[::1]:9");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 9);
}

TEST(ListenAddressTest, RejectsGarbageNamingTheAddressAndTheReason) {
  struct Case {
    const char* text;
    const char* why;
  };
  for (const Case& c :
       {Case{"foo", "port must be a number"}, Case{"127.0.0.1:99999", "port must be a number"},
        Case{"9400x", "port must be a number"}, Case{"127.0.0.1:", "port must be a number"},
        Case{":9400", "host is empty"}, Case{"[::1]9400", "[address]:port"}}) {
    Result<ListenAddress> r = ParseListenAddress(c.text);
    ASSERT_FALSE(r) << c.text;
    EXPECT_EQ(r.error().code, ErrorCode::kConfig);
    EXPECT_NE(r.error().context.find(std::string("invalid listen address '") + c.text + "'"),
              std::string::npos)
        << r.error().context;
    EXPECT_NE(r.error().context.find(c.why), std::string::npos) << r.error().context;
  }
}

TEST(ListenAddressTest, BindFailureOfABusyPortSaysAddressInUse) {
  BusyPort busy;
  EXPECT_EQ(DescribeBindFailure(busy.Address()).rfind("address already in use", 0), 0u)
      << DescribeBindFailure(busy.Address());
  EXPECT_NE(DescribeBindFailure("nonsense").find("invalid listen address"), std::string::npos);
}

// The daemon itself: a port in use and an invalid address are errors that
// name the address and the problem, with distinct exit codes.
TEST(ListenAddressTest, ServeNamesTheListenProblem) {
  BusyPort busy;
  testing::TempDir tmp;
  const std::string serve = testing::BinaryPath("profwatch") + " serve --watch " + tmp.Sub("j");
  testing::CommandResult in_use = testing::RunCommand(serve + " --listen " + busy.Address());
  EXPECT_EQ(in_use.exit_code, 1) << in_use.err;
  EXPECT_NE(in_use.err.find("cannot listen address=" + busy.Address() +
                            " error=\"address already in use"),
            std::string::npos)
      << in_use.err;
  testing::CommandResult invalid = testing::RunCommand(serve + " --listen foo");
  EXPECT_EQ(invalid.exit_code, 2) << invalid.err;
  EXPECT_NE(invalid.err.find("cannot listen address=foo error=\"invalid listen address 'foo'"),
            std::string::npos)
      << invalid.err;
}

}  // namespace
}  // namespace profwatch::web
