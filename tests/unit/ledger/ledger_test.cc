// The ledger on values: refusals counted once while they stay and by owner,
// caps an owner goes over and comes back under, what is refused now.
#include "ledger/ledger.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace profwatch::ledger {
namespace {

constexpr watch::Owner kAlice = 1001;
constexpr watch::Owner kBob = 1002;
constexpr watch::Owner kCarol = 1003;

Refusal Dir(const std::string& path, watch::Owner owner) {
  Refusal r;
  r.key = path;
  r.owner = owner;
  r.detail = {{"files", 9}};
  return r;
}

std::vector<std::string> Keys(const std::vector<Refusal>& v) {
  std::vector<std::string> out;
  for (const Refusal& r : v) out.push_back(r.key);
  return out;
}

TEST(LedgerTest, ARefusalIsCountedOncePerOwnerWhileItStays) {
  Ledger l;
  l.ObserveRefusals("dir_file_cap", {Dir("/j/a", kAlice), Dir("/j/b", kAlice), Dir("/k", kBob)});
  Changes c = l.TakeChanges();
  EXPECT_EQ(c.refused, (std::map<RefusedKey, int64_t>{{{"dir_file_cap", kAlice}, 2},
                                                      {{"dir_file_cap", kBob}, 1}}));
  EXPECT_EQ(Keys(c.began["dir_file_cap"]), (std::vector<std::string>{"/j/a", "/j/b", "/k"}));
  EXPECT_EQ(c.began["dir_file_cap"][0].reason, "dir_file_cap");
  EXPECT_TRUE(c.ended.empty());
  // The same scan again: nothing to count or say.
  l.ObserveRefusals("dir_file_cap", {Dir("/j/a", kAlice), Dir("/j/b", kAlice), Dir("/k", kBob)});
  EXPECT_TRUE(l.TakeChanges().empty());
  // /j/b goes, /j/c comes: one refusal more, one ended.
  l.ObserveRefusals("dir_file_cap", {Dir("/j/a", kAlice), Dir("/j/c", kAlice), Dir("/k", kBob)});
  c = l.TakeChanges();
  EXPECT_EQ(c.refused, (std::map<RefusedKey, int64_t>{{{"dir_file_cap", kAlice}, 1}}));
  EXPECT_EQ(Keys(c.began["dir_file_cap"]), std::vector<std::string>{"/j/c"});
  EXPECT_EQ(Keys(c.ended["dir_file_cap"]), std::vector<std::string>{"/j/b"});
  // /j/b back: counted again (it was gone).
  l.ObserveRefusals("dir_file_cap", {Dir("/j/a", kAlice), Dir("/j/b", kAlice)});
  c = l.TakeChanges();
  EXPECT_EQ(c.refused, (std::map<RefusedKey, int64_t>{{{"dir_file_cap", kAlice}, 1}}));
  EXPECT_EQ(Keys(c.ended["dir_file_cap"]), (std::vector<std::string>{"/j/c", "/k"}));
  EXPECT_EQ(l.Refused("dir_file_cap").size(), 2u);
  // Another reason is its own set: observing it leaves these alone.
  l.ObserveRefusals("outside_root", {});
  EXPECT_TRUE(l.TakeChanges().empty());
  EXPECT_EQ(l.Refused("dir_file_cap").size(), 2u);
  EXPECT_TRUE(l.Refused("outside_root").empty());
}

TEST(LedgerTest, AddedRefusalsStayUntilKeptNoLonger) {
  Ledger l;
  Refusal r = Dir("jobA/run1", kAlice);
  r.reason = "retention";
  r.last_activity_unix = 100;
  l.AddRefusal(r);
  l.AddRefusal(r);  // reported again while it stays: counted once
  r.key = "jobB/run1";
  r.owner = kBob;
  l.AddRefusal(r);
  Changes c = l.TakeChanges();
  EXPECT_EQ(c.refused,
            (std::map<RefusedKey, int64_t>{{{"retention", kAlice}, 1}, {{"retention", kBob}, 1}}));
  ASSERT_EQ(l.Refused("retention").size(), 2u);
  EXPECT_EQ(l.Refused("retention").at("jobA/run1").last_activity_unix, 100);
  l.KeepRefusals("retention", [](const Refusal& x) { return x.owner == kBob; });
  c = l.TakeChanges();
  EXPECT_EQ(Keys(c.ended["retention"]), std::vector<std::string>{"jobA/run1"});
  EXPECT_TRUE(c.refused.empty());
  EXPECT_EQ(l.Refused("retention").size(), 1u);
}

TEST(LedgerTest, CountedRefusalsBeginAndAreKeptNowhere) {
  Ledger l;
  Refusal w = Dir("/j/r/ts", kBob);
  w.reason = "window_file_cap";
  l.CountRefusal(w);
  l.CountRefusal(w);  // reported twice by its source: counted twice
  Changes c = l.TakeChanges();
  EXPECT_EQ(c.refused, (std::map<RefusedKey, int64_t>{{{"window_file_cap", kBob}, 2}}));
  EXPECT_EQ(Keys(c.began["window_file_cap"]), (std::vector<std::string>{"/j/r/ts", "/j/r/ts"}));
  EXPECT_TRUE(l.Refused("window_file_cap").empty());
  EXPECT_TRUE(l.TakeChanges().empty());
}

Capped Cap(watch::Owner owner, const std::string& reason, int64_t left_out, int64_t newly) {
  Capped c;
  c.owner = owner;
  c.reason = reason;
  c.left_out = left_out;
  c.newly = newly;
  return c;
}

TEST(LedgerTest, AnOwnerGoesOverACapOnceAndComesBackUnderOnce) {
  Ledger l;
  const std::vector<std::string_view> runs = {"owner_run_cap"};
  l.ObserveCapped(runs, {Cap(kAlice, "owner_run_cap", 3, 3)});
  Changes c = l.TakeChanges();
  ASSERT_EQ(c.over.size(), 1u);
  EXPECT_EQ(c.over[0].owner, kAlice);
  EXPECT_EQ(c.refused, (std::map<RefusedKey, int64_t>{{{"owner_run_cap", kAlice}, 3}}));
  // Still over, two more left out: counted, not said again.
  l.ObserveCapped(runs, {Cap(kAlice, "owner_run_cap", 5, 2)});
  c = l.TakeChanges();
  EXPECT_TRUE(c.over.empty());
  EXPECT_EQ(c.refused, (std::map<RefusedKey, int64_t>{{{"owner_run_cap", kAlice}, 2}}));
  EXPECT_EQ(
      l.CappedNow(),
      (std::map<std::pair<watch::Owner, std::string>, int64_t>{{{kAlice, "owner_run_cap"}, 5}}));
  // Directory caps count their growth; watch caps refuse nothing.
  const std::vector<std::string_view> walk = {"owner_dir_cap", "owner_watch_cap"};
  l.ObserveCapped(
      walk, {Cap(kBob, "owner_dir_cap", 4, Capped::kGrowth), Cap(kBob, "owner_watch_cap", 7, 0)});
  c = l.TakeChanges();
  EXPECT_EQ(c.over.size(), 2u);
  EXPECT_EQ(c.refused, (std::map<RefusedKey, int64_t>{{{"owner_dir_cap", kBob}, 4}}));
  l.ObserveCapped(walk, {Cap(kBob, "owner_dir_cap", 6, Capped::kGrowth)});
  c = l.TakeChanges();
  EXPECT_EQ(c.refused, (std::map<RefusedKey, int64_t>{{{"owner_dir_cap", kBob}, 2}}));
  ASSERT_EQ(c.under.size(), 1u);
  EXPECT_EQ(c.under[0], (std::pair<watch::Owner, std::string>{kBob, "owner_watch_cap"}));
  // Observing the walk's caps leaves the run cap alone; then alice is back.
  EXPECT_EQ(l.CappedNow().size(), 2u);
  l.ObserveCapped(runs, {});
  c = l.TakeChanges();
  ASSERT_EQ(c.under.size(), 1u);
  EXPECT_EQ(c.under[0].first, kAlice);
  EXPECT_EQ(
      l.CappedNow(),
      (std::map<std::pair<watch::Owner, std::string>, int64_t>{{{kBob, "owner_dir_cap"}, 6}}));
}

// What an owner's analyses cost: increments since the last changes, and
// totals.
TEST(LedgerTest, AnalysesAreCostedPerOwner) {
  Ledger l;
  l.AddAnalysis(kAlice, 2.5, false);
  l.AddAnalysis(kAlice, 1.0, true);
  l.AddAnalysis(kBob, 0.5, false);
  Changes c = l.TakeChanges();
  EXPECT_EQ(c.costs, (std::map<watch::Owner, Costs>{{kAlice, {3.5, 2, 1}}, {kBob, {0.5, 1, 0}}}));
  l.AddAnalysis(kAlice, 4.0, true);
  c = l.TakeChanges();
  EXPECT_EQ(c.costs, (std::map<watch::Owner, Costs>{{kAlice, {4.0, 1, 1}}}));
  EXPECT_EQ(l.CostsByOwner().at(kAlice), (Costs{7.5, 3, 2}));
  EXPECT_TRUE(l.TakeChanges().empty());
}

// Each run's kept state is charged to its owner; a run restored without a
// known owner is charged once a scan names it; a run that keeps nothing is
// forgotten.
TEST(LedgerTest, KeptStateIsChargedToEachRunsOwner) {
  Ledger l;
  l.KeepState("j/a", kAlice, 100);
  l.KeepState("j/b", kAlice, 50);
  l.KeepState("k/c", watch::kNoOwner, 70);  // restored before a scan
  EXPECT_EQ(l.StateBytes(kAlice), 150);
  EXPECT_EQ(l.StateBytes(watch::kNoOwner), 70);
  EXPECT_TRUE(l.HasRunsWithoutOwner());
  l.SetRunOwner("k/c", kBob);
  l.SetRunOwner("x/none", kBob);  // keeps nothing: nothing to charge
  EXPECT_EQ(l.StateBytes(kBob), 70);
  EXPECT_EQ(l.StateBytes(watch::kNoOwner), 0);
  EXPECT_FALSE(l.HasRunsWithoutOwner());
  l.KeepState("j/a", kAlice, 30);  // a new window of the run replaces what it kept
  EXPECT_EQ(l.StateBytes(kAlice), 80);
  EXPECT_EQ(l.StateBytesOf("j/a"), 30);
  l.KeepState("j/b", kAlice, 0);  // expired
  EXPECT_EQ(l.StateBytes(kAlice), 30);
  EXPECT_EQ(l.StateBytesOf("j/b"), 0);
  l.SetRunOwner("j/a", kBob);  // the run's directory changed hands
  EXPECT_EQ(l.StateBytes(kAlice), 0);
  EXPECT_EQ(l.StateBytes(kBob), 100);
  EXPECT_EQ(l.StateBytes(), 100);
}

// The room a run's next state has: under the owner's cap beside the
// owner's other runs; under the daemon's cap beside every other run, or,
// once that is full, under an equal share of it beside the owner's others.
// A run's own kept bytes are replaced, so they leave room.
TEST(LedgerTest, StateRoomIsTheOwnersAndTheDaemonsWithAnEqualShareOnceFull) {
  Ledger l;
  EXPECT_EQ(l.RoomFor("j/a", kAlice, 0, 0).owner, std::nullopt) << "0: no cap";
  EXPECT_EQ(l.RoomFor("j/a", kAlice, 0, 0).daemon, std::nullopt);
  Ledger::StateRoom r = l.RoomFor("j/a", kAlice, 300, 1000);
  EXPECT_EQ(r.owner, 300);
  EXPECT_EQ(r.daemon, 1000) << "the only owner: the whole cap";
  l.KeepState("j/a", kAlice, 200);
  l.KeepState("j/b", kAlice, 100);
  r = l.RoomFor("j/a", kAlice, 300, 1000);
  EXPECT_EQ(r.owner, 200) << "j/a's own 200 bytes are replaced";
  EXPECT_EQ(r.daemon, 900);
  EXPECT_EQ(l.RoomFor("j/c", kAlice, 300, 1000).owner, 0) << "at its cap";
  l.KeepState("k/x", kBob, 600);
  // Beside all runs 1000 - 900 = 100 is left; Carol (keeping nothing) has
  // an equal third of 1000 beside nothing.
  EXPECT_EQ(l.RoomFor("m/y", kCarol, 0, 1000).daemon, 333);
  // Alice keeps 300 of an equal half: 200 more; Bob keeps more than half:
  // only what is left beside all runs.
  EXPECT_EQ(l.RoomFor("j/c", kAlice, 0, 1000).daemon, 200);
  EXPECT_EQ(l.RoomFor("k/z", kBob, 0, 1000).daemon, 100);
  EXPECT_EQ(l.RoomFor("k/x", kBob, 0, 1000).daemon, 700) << "its own run replaced";
  l.KeepState("k/z", kBob, 400);  // past the cap: 1,300 kept
  EXPECT_EQ(l.StateBytes(), 1300);
  EXPECT_EQ(l.RoomFor("k/w", kBob, 0, 1000).daemon, 0) << "over the cap and over its share";
  EXPECT_EQ(l.RoomFor("j/c", kAlice, 0, 1000).daemon, 200) << "below its share: still served";
}

}  // namespace
}  // namespace profwatch::ledger
