// SPDX-License-Identifier: MIT
// `bonsaictl top [SERVICE...] [-d SECS] [-n COUNT] [-s KEY] [--batch]`: a live view of
// every service's limits against their use. On a terminal: full screen (ANSI), redrawn
// every SECS, keys q (quit) and r c p t w n (sort). Elsewhere, or with --batch: plain
// iterations, no escape codes, like `top -b`.
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <fmt/core.h>
#include <map>
#include <memory>
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "cmd/commands.h"
#include "segment/shm_client.h"
#include "sys/clock.h"
#include "stat/top_view.h"

namespace bonsai::ctl {
namespace {

volatile sig_atomic_t g_stop = 0;
termios g_saved{};
bool g_raw = false;

void restore_terminal() {
  if (!g_raw) return;
  tcsetattr(STDIN_FILENO, TCSANOW, &g_saved);
  (void)!write(STDOUT_FILENO, "\x1b[?25h\x1b[?1049l", 14);  // cursor back, main screen back
  g_raw = false;
}

TopSort sort_key(const std::string& k) {
  if (k == "rate") return TopSort::Rate;
  if (k == "calls") return TopSort::Calls;
  if (k == "cap") return TopSort::Cap;
  if (k == "held" || k == "throttled") return TopSort::Throttled;
  if (k == "wait") return TopSort::Wait;
  if (k == "name") return TopSort::Name;
  usage_error(fmt::format("bad sort key '{}' (rate, calls, cap, held, wait, name)", k));
}

// A whole number of refreshes; -1 for anything else.
long count_parse(const std::string& v) {
  if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stol(v);
}

struct Snap {
  std::unique_ptr<Segment> seg;
  ServiceStat prev;
  bool have = false;
};

// One refresh: the rows of every service (the named ones, or all of this user's).
std::vector<TopRow> collect(std::map<std::string, Snap>& snaps, const std::vector<std::string>& named) {
  std::vector<std::string> names = named.empty() ? services_list() : named;
  std::vector<TopRow> rows;
  for (const auto& name : names) {
    Snap& s = snaps[name];
    try {
      if (s.seg && s.seg->file_state() != FileState::Same) s.seg.reset(), s.have = false;
      if (!s.seg) s.seg = Segment::open(name, false);
      ServiceStat cur = stat_snapshot(*s.seg);
      if (s.have) {
        stat_rates(s.prev, cur);
        auto r = top_rows(s.prev, cur);
        rows.insert(rows.end(), r.begin(), r.end());
      }
      s.prev = std::move(cur);
      s.have = true;
    } catch (const CtlError&) {
      snaps.erase(name);
    }
  }
  return rows;
}

constexpr CliOption kOptions[] = {
    {"-d, --delay", OptArg::Required, "SECS", "refresh interval (default 1, 0.1 to 3600)"},
    {"-n, --count", OptArg::Required, "COUNT", "stop after COUNT refreshes"},
    {"-s, --sort", OptArg::Required, "KEY", "sort by rate, calls, cap (% used), held, wait or name (default)"},
    {"-b, --batch", OptArg::None, {}, "plain iterations even on a terminal (like top -b)"},
};

int cmd_top(const Args& args) {
  CliParsed opt = options_parse(args, kOptions);
  double delay = 1.0;
  long count = -1;
  bool batch = opt.has("--batch");
  TopSort key = opt.has("--sort") ? sort_key(opt.value("--sort")) : TopSort::Name;
  if (opt.has("--delay")) {
    std::string v = opt.value("--delay");
    char* end = nullptr;
    delay = std::strtod(v.c_str(), &end);
    if (!end || *end || !(delay >= 0.1 && delay <= 3600)) usage_error(fmt::format("bad -d '{}' (0.1 to 3600 s)", v));
  }
  if (opt.has("--count")) {
    std::string v = opt.value("--count");
    count = count_parse(v);
    if (count <= 0) usage_error(fmt::format("bad -n '{}' (a whole number > 0)", v));
  }
  std::vector<std::string> named = opt.words;
  named.insert(named.end(), opt.rest.begin(), opt.rest.end());
  for (const auto& a : named) segment_path(a);  // validates the name
  bool screen = !batch && isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
  signal(SIGINT, [](int) { g_stop = 1; });
  signal(SIGTERM, [](int) { g_stop = 1; });
  if (screen && tcgetattr(STDIN_FILENO, &g_saved) == 0) {
    termios raw = g_saved;
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    tcsetattr(STDIN_FILENO, TCSANOW, &raw);
    g_raw = true;
    std::atexit(restore_terminal);
    fmt::print("\x1b[?1049h\x1b[?25l");  // the alternate screen, no cursor
  }
  std::map<std::string, Snap> snaps;
  collect(snaps, named);  // the first snapshot: rates need two
  for (long n = 0; !g_stop && (count < 0 || n < count); ++n) {
    // Wait `delay`, reacting to keys at once on a terminal.
    uint64_t until = mono_ns() + static_cast<uint64_t>(delay * 1e9);
    bool redraw_now = false;
    while (!g_stop && !redraw_now) {
      uint64_t now = mono_ns();
      if (now >= until) break;
      pollfd p{STDIN_FILENO, POLLIN, 0};
      int ms = static_cast<int>((until - now) / 1'000'000) + 1;
      if (screen && poll(&p, 1, ms) > 0) {
        char c = 0;
        if (read(STDIN_FILENO, &c, 1) == 1) {
          switch (c) {
            case 'q': g_stop = 1; break;
            case 'r': key = TopSort::Rate; break;
            case 'c': key = TopSort::Calls; break;
            case 'p': key = TopSort::Cap; break;
            case 't': key = TopSort::Throttled; break;
            case 'w': key = TopSort::Wait; break;
            case 'n': key = TopSort::Name; break;
            default: break;
          }
        }
      } else if (!screen) {
        timespec ts{static_cast<time_t>((until - now) / 1'000'000'000), static_cast<long>((until - now) % 1'000'000'000)};
        nanosleep(&ts, nullptr);
      }
    }
    if (g_stop) break;
    std::vector<TopRow> rows = collect(snaps, named);
    top_sort(rows, key);
    size_t width = 0;
    winsize ws{};
    if (screen && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) width = ws.ws_col;
    time_t t = time(nullptr);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%H:%M:%S", localtime(&t));
    std::string head = fmt::format("bonsai top - {}  every {:.1f} s  {} service(s){}\n", stamp, delay, snaps.size(),
                                   screen ? "  [q quit, sort: r rate c calls p %cap t held w wait n name]" : "");
    std::string body = top_render(rows, delay, width);
    if (screen) fmt::print("\x1b[H\x1b[2J{}\n{}", head, body);
    else fmt::print("{}{}\n", head, body);
    std::fflush(stdout);
  }
  restore_terminal();
  return kExitOk;
}

}  // namespace

extern const Command kCmdTop{
    "top", "top [SERVICE...] [-d SECS] [-n COUNT] [-s rate|calls|cap|held|wait|name] [--batch]",
    "A live view of the services (all of this user's if none is named): per service one\n"
    "row per limit in force (the rate of the calls it covers, its cap, % of the cap used,\n"
    "calls held back per second, average wait of a held call) and one per unlimited call\n"
    "that moved anything. On a terminal it redraws full screen; q quits, r c p t w n sort.\n"
    "Elsewhere, or with --batch, it prints plain iterations (like top -b).\n",
    kOptions,
    "exit status: 0, 2 usage error\n",
    cmd_top};

}  // namespace bonsai::ctl
