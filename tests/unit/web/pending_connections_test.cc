#include "web/pending_connections.h"

#include <gtest/gtest.h>

namespace profwatch::web {
namespace {

using Connection = PendingConnections::Connection;

TEST(PendingConnectionsTest, NothingIsShedUpToTheLimit) {
  PendingConnections pending(3);
  EXPECT_FALSE(pending.Add({10, "127.0.0.2", 1000}));
  EXPECT_FALSE(pending.Add({11, "127.0.0.2", 1001}));
  EXPECT_FALSE(pending.Add({12, "127.0.0.3", 1000}));
  EXPECT_EQ(pending.size(), 3u);
}

TEST(PendingConnectionsTest, TheOldestOfTheBusiestAddressIsShed) {
  PendingConnections pending(3);
  pending.Add({10, "127.0.0.1", 5000});  // the scraper, oldest of all
  pending.Add({11, "127.0.0.2", 1000});
  pending.Add({12, "127.0.0.2", 1001});
  auto shed = pending.Add({13, "127.0.0.2", 1002});
  ASSERT_TRUE(shed);
  EXPECT_EQ(shed->fd, 11);
  EXPECT_EQ(shed->address, "127.0.0.2");
  EXPECT_EQ(shed->port, 1000);
  EXPECT_EQ(pending.size(), 3u);
  shed = pending.Add({14, "127.0.0.3", 1000});
  ASSERT_TRUE(shed);
  EXPECT_EQ(shed->fd, 12);
}

TEST(PendingConnectionsTest, AmongEquallyBusyAddressesTheOldestGoes) {
  PendingConnections pending(2);
  pending.Add({10, "127.0.0.4", 1});
  pending.Add({11, "127.0.0.2", 1});
  auto shed = pending.Add({12, "127.0.0.3", 1});
  ASSERT_TRUE(shed);
  EXPECT_EQ(shed->fd, 10);
}

TEST(PendingConnectionsTest, ARequestOrACloseEndsPending) {
  PendingConnections pending(2);
  pending.Add({10, "127.0.0.2", 1000});
  pending.Add({11, "127.0.0.2", 1001});
  pending.Remove("127.0.0.2", 1000);
  pending.Remove("127.0.0.2", 1000);  // again: no effect
  pending.Remove("127.0.0.9", 1);     // unknown: no effect
  EXPECT_EQ(pending.size(), 1u);
  EXPECT_FALSE(pending.Add({12, "127.0.0.2", 1002}));
  auto shed = pending.Add({13, "127.0.0.1", 1});
  ASSERT_TRUE(shed);
  EXPECT_EQ(shed->fd, 11);  // not the removed one
}

TEST(PendingConnectionsTest, TheSamePeerAgainReplacesItsOldEntry) {
  PendingConnections pending(2);
  pending.Add({10, "127.0.0.2", 1000});
  EXPECT_FALSE(pending.Add({11, "127.0.0.2", 1000}));
  EXPECT_EQ(pending.size(), 1u);
  pending.Add({12, "127.0.0.3", 1});
  auto shed = pending.Add({13, "127.0.0.4", 1});
  ASSERT_TRUE(shed);
  EXPECT_EQ(shed->fd, 11);
}

}  // namespace
}  // namespace profwatch::web
