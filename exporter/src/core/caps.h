// The caps on what one owner (watch/owner.h) may cost the daemon, each
// declared once: its flag, default, the reason label it is exported under,
// what is past it and why this default. The stages that apply a cap take
// its default from here, and docs/security.md ("Shares per owner") lists
// them as RenderOwnerCapsTable() prints them (CapsTest checks that).
//
// Thread-safety: constants and a pure function.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace profwatch::caps {

struct Cap {
  std::string_view flag;    // serve's flag, with its argument: "--max-runs-per-owner N"
  std::string_view reason;  // profwatch_owner_capped{reason}; "" when not exported there
  int64_t value = 0;        // the default; 0 would mean no cap
  bool bytes = false;       // `value` is bytes (shown in MiB), else a count
  std::string_view past;    // what is past the cap
  std::string_view why;     // why this default
};

inline constexpr Cap kRunsPerOwner{
    "--max-runs-per-owner N",
    "owner_run_cap",
    1'000,
    false,
    "the owner's runs with the oldest writes (runs already tracked are kept first): not "
    "analysed, not exported, no training-log reader",
    "1,000 runs at once is far beyond one user's share of a real cluster; each run costs its "
    "exported series (about 230 per run) and a log reader"};
inline constexpr Cap kWindowsPerOwner{
    "--max-windows-per-owner N",
    "owner_window_cap",
    10'000,
    false,
    "the owner's oldest windows: no state; they do not come back while the daemon runs",
    "every window whose files are on disk is tracked (the analysed ones too, to see them "
    "change): 100 runs keeping 100 profiling windows each"};
inline constexpr Cap kDirsPerOwner{
    "--max-dirs-per-owner N",
    "owner_dir_cap",
    100'000,
    false,
    "the rest of the owner's tree in that scan (`<ts>` dirs are walked newest first, so the "
    "oldest windows are what is left out); a `plugins/profile` entry not named like a `<ts>` "
    "is paid from the same share, so the list of ignored paths the daemon keeps "
    "(`not_timestamp`) stops there too",
    "100 runs of 1,000 windows each, every `<ts>` dir kept; walking that many costs about a "
    "second per scan"};
inline constexpr Cap kWatchesPerOwner{
    "--max-watches-per-owner N",
    "owner_watch_cap",
    1'024,
    false,
    "inotify watches: the owner's other directories are found by the `--poll-interval` rescan "
    "only (nothing is refused)",
    "watches are a per-uid kernel limit (`fs.inotify.max_user_watches`, 8,192 on older "
    "kernels) shared with everything the daemon's user runs; directories other than `<ts>` "
    "dirs are watched first, since a new window shows up as an entry of its profile dir"};
inline constexpr Cap kHistoryBytesPerOwner{
    "--history-max-bytes N",
    "",
    int64_t{64} << 20,
    true,
    "each owner's `--history` file rotates on its own (`FILE.uidN` to `FILE.uidN.1`; "
    "`profwatch_history_rotations_total{owner}`, one log line per rotation), so one owner's "
    "windows never rotate away another's",
    "unchanged from the single file it replaces; now per owner"};

inline constexpr Cap kStateBytesPerOwner{
    "--max-state-bytes-per-owner N",
    "owner_state_cap",
    int64_t{256} << 20,
    true,
    "a window whose run state would take the owner's kept run states (memory and `--state`) past "
    "it is not exported: its run keeps its previous window and is flagged `owner_state_cap` "
    "(`profwatch_window_failed`, one warning per window)",
    "a real run keeps 11-16 KB, a 1,024-host job about 4 MB, a run of 65,536 step markers about "
    "1 MB: 1,000 runs of 256 KB, or 64 such jobs; a restart loads about what is kept"};

inline constexpr const Cap* kOwnerCaps[] = {&kRunsPerOwner,       &kWindowsPerOwner,
                                            &kDirsPerOwner,       &kWatchesPerOwner,
                                            &kStateBytesPerOwner, &kHistoryBytesPerOwner};

// The Markdown table of kOwnerCaps: one row per cap (flag and reason,
// default, what is past it, why), under a header row.
std::string RenderOwnerCapsTable();

}  // namespace profwatch::caps
