// SPDX-License-Identifier: MIT
// `bonsaictl run [-c FILE] -s SERVICE [-l LIMIT]... [--scope S] -- CMD [ARGS]`:
// prepare the service's segment, put libbonsai.so in front of LD_PRELOAD, set
// BONSAI_SERVICE (and BONSAI_COMPRESS_* from the file), and exec CMD; or, for a
// program LD_PRELOAD cannot reach (static, Go) or with --supervise, start a
// supervisor and exec CMD under its seccomp filter (sv_launch.h).
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fmt/core.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "abi/limit_parse.h"
#include "segment/host_client.h"
#include "cmd/commands.h"
#include "fleet/fleet_publish.h"
#include "launch/launch_kind.h"
#include "config/limits_merge.h"
#include "launch/run_env.h"
#include "shm/seqlock.h"
#include "segment/shm_client.h"
#include "launch/sv_launch.h"
#include "supervisor/sv_syscalls.h"
#include "launch/uring_deny.h"
#include "config/yaml_load.h"

namespace bonsai::ctl {

// The reads at the file position protect: may name, which a supervisor does not time.
constexpr CallMask kProtectReadCalls = call_bit(CallId::read) | call_bit(CallId::readv);
namespace {

struct RunOptions {
  std::string file, service, scope, io_uring;
  int supervise = -1;  // --supervise 1, --no-supervise 0, else by the kind of program
  bool strict = false;  // --strict
  std::vector<std::string> limits;
  Args command;
};

constexpr CliOption kOptions[] = {
    {"-c, --config", OptArg::Required, "FILE", "take SERVICE's limits, scope and compression from a YAML file"},
    {"-s, --service", OptArg::Required, "SERVICE", "the service CMD joins (created if needed)"},
    {"-l, --limit", OptArg::Required, "LIMIT",
     "a limit in the BONSAI_LIMITS grammar (repeatable); goes over the\n"
     "file's rules as set --merge does"},
    {"--scope", OptArg::Required, "process|service", "process (each process its own buckets) or service (shared)"},
    {"--io-uring", OptArg::Required, "deny|allow",
     "deny: io_uring_setup fails (ENOSYS) in CMD and its children, so\n"
     "io_uring users fall back to limited calls (sets no_new_privs\n"
     "unless root: setuid programs then gain no privileges); default:\n"
     "the file's io_uring, else as inherited (BONSAI_IO_URING), else\n"
     "under a data limit deny as root, and a note that io_uring users\n"
     "are NOT limited otherwise"},
    {"--supervise", OptArg::None, {},
     "charge CMD's system calls from a supervisor process (seccomp user\n"
     "notification) instead of LD_PRELOAD; the default for statically\n"
     "linked and Go programs, which LD_PRELOAD cannot reach. The tree\n"
     "runs with no_new_privs (unless root) and io_uring denied (unless\n"
     "--io-uring allow); it sees the calls limited (and the preads\n"
     "protect: times, which it makes itself) when it starts"},
    {"--no-supervise", OptArg::None, {}, "never supervise (a static or Go CMD then runs WITHOUT LIMITS)"},
    {"--strict", OptArg::None, {},
     "nothing in the tree escapes the limits named at launch: libbonsai.so\n"
     "marks the calls it charges, and a seccomp filter sends every other\n"
     "data call (raw syscalls, static, Go, 32-bit children) to a supervisor;\n"
     "io_uring denied; no_new_privs unless root (also `strict: true`)"},
};

RunOptions run_parse(const Args& args) {
  RunOptions o;
  CliParsed p = options_parse(args, kOptions, true);  // CMD's own options are CMD's
  o.file = p.value("--config");
  o.service = p.value("--service");
  o.limits = p.values("--limit");
  o.scope = p.value("--scope");
  o.io_uring = p.value("--io-uring");
  if (p.has("--supervise")) o.supervise = 1;
  if (p.has("--no-supervise")) o.supervise = 0;
  if (p.has("--supervise") && p.has("--no-supervise")) usage_error("--supervise and --no-supervise contradict each other");
  o.strict = p.has("--strict");
  o.command = p.rest;
  if (o.service.empty()) usage_error("-s SERVICE is required");
  if (o.command.empty()) usage_error("no command given (put it after --)");
  if (!o.scope.empty() && o.scope != "process" && o.scope != "service")
    usage_error(fmt::format("bad --scope '{}' (process or service)", o.scope));
  if (!o.io_uring.empty() && o.io_uring != "deny" && o.io_uring != "allow")
    usage_error(fmt::format("bad --io-uring '{}' (deny or allow)", o.io_uring));
  if (o.strict && o.supervise == 0) usage_error("--strict and --no-supervise contradict each other");
  if (o.strict && o.io_uring == "allow") usage_error("--strict denies io_uring: --io-uring=allow cannot go with it");
  return o;
}

// Drops to --user's identity for good (groups, gid, uid), after the segment is theirs.
void become_user() {
  const std::string& name = ctl_user_name();
  if (initgroups(name.c_str(), ctl_gid()) != 0 || setgid(ctl_gid()) != 0 || setuid(ctl_uid()) != 0)
    runtime_error(fmt::format("cannot become {}: {}", user_text(ctl_uid()), std::strerror(errno)));
  if (setuid(0) == 0) runtime_error("could not drop root for good");  // paranoia: the drop must stick
  if (const passwd* pw = getpwuid(ctl_uid())) {
    setenv("HOME", pw->pw_dir, 1);
    setenv("USER", pw->pw_name, 1);
    setenv("LOGNAME", pw->pw_name, 1);
  }
}

void export_compression(const CompressionConfig& c) {
  if (!c.present) return;
  std::string to;
  for (const auto& t : c.to) to += (to.empty() ? "" : ",") + t;
  std::string levels;
  for (const auto& l : c.levels) levels += (levels.empty() ? "" : ",") + l;
  if (!to.empty()) setenv("BONSAI_COMPRESS_TO", to.c_str(), 1);
  if (c.accept) setenv("BONSAI_COMPRESS_ACCEPT", "1", 1);
  setenv("BONSAI_COMPRESS_POLICY", c.policy.c_str(), 1);
  if (!levels.empty()) setenv("BONSAI_COMPRESS_LEVELS", levels.c_str(), 1);
}

// io_uring under a data limit, nobody having said allow or deny (uring_deny.h): root
// denies it here (no no_new_privs needed; --user's drop comes later and keeps the
// filter), anyone else is told that io_uring users will not be limited.
void io_uring_default(const std::string& service, bool unset, bool data_limited) {
  if (!unset || !data_limited) return;
  std::string why;
  if (geteuid() == 0 && uring_deny_here(why)) {
    setenv("BONSAI_IO_URING", "deny", 1);  // the library finds it denied and adds no filter of its own
    // Said, not done silently: a program that needs io_uring (fio --ioengine=io_uring) stops.
    fmt::print(stderr, "bonsaictl run: note: io_uring denied in service '{}' (the default as root under a data "
               "limit): io_uring_setup fails with ENOSYS, so liburing programs fall back to limited calls and fio "
               "--ioengine=io_uring stops; --io-uring=allow keeps it, and what goes through it unlimited\n", service);
    return;
  }
  fmt::print(stderr, "bonsaictl run: note: io_uring stays allowed{}: what service '{}' moves through io_uring (fio "
             "--ioengine=io_uring, liburing programs) is NOT limited; --io-uring=deny makes such programs fall back "
             "to limited calls{}\n", geteuid() == 0 ? fmt::format(" ({})", why) : "", service,
             geteuid() == 0 ? "" : " (and sets no_new_privs: setuid programs the service starts gain no privileges)");
}

int cmd_run(const Args& args) {
  RunOptions o = run_parse(args);
  segment_path(o.service);  // validates the name
  LimitSet limits{};
  bool have_limits = false;
  ShmScope scope = o.scope == "service" ? ShmScope::Service : ShmScope::Process;
  CompressionConfig compression;
  const ServiceConfig* file_svc = nullptr;   // the file's service
  const ServiceConfig* fleet_svc = nullptr;  // the same, when it has `fleet:`
  Config cfg;
  std::string io_uring;  // the file's io_uring:
  if (!o.file.empty()) {
    std::vector<Diag> diags;
    cfg = yaml_load_file(o.file, diags);
    if (!diags.empty()) return diags_print(diags), kExitUsage;
    const ServiceConfig* s = cfg.find(o.service);
    if (!s) {
      std::vector<std::string_view> names;
      for (const auto& c : cfg.services) names.push_back(c.name);
      std::string_view hint = closest_word(o.service, names);
      usage_error(fmt::format("{} has no service '{}'{}", o.file, o.service,
                              hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint)));
    }
    limits = s->limits;
    have_limits = true;
    if (o.scope.empty()) scope = s->scope;
    compression = s->compression;
    io_uring = s->io_uring;
    file_svc = s;
    if (s->fleet.present) fleet_svc = s;
    // `user:` (root): the segment is that user's and CMD runs as that user, unless --user said otherwise.
    if (!s->user.empty() && !ctl_other_user()) ctl_target_user_named(s->user);
    if (cfg.has_host) host_install(cfg.capacity);  // shares: what the file's ceilings borrow from
  }
  if (!o.limits.empty()) {
    std::string text;
    for (const auto& l : o.limits) text += (text.empty() ? "" : ",") + l;
    LimitSet extra{};
    ParseError err;
    if (!limit_parse(text, extra, err))
      usage_error(fmt::format("-l: {}\n  {}\n  {}^", err.message, text, std::string(err.offset, ' ')));
    std::string why;
    if (!limits_merge(limits, extra, why)) usage_error("-l: " + why);
    have_limits = true;
  }
  std::string path = command_resolve(o.command[0]);
  if (path.empty()) runtime_error(fmt::format("command not found: {}", o.command[0]));
  LaunchInfo kind = launch_inspect(path);
  bool strict = o.strict || (file_svc && file_svc->strict);
  if (strict && (o.io_uring.empty() ? io_uring : o.io_uring) == "allow")
    usage_error(fmt::format("{}: strict mode denies io_uring: 'io_uring: allow' cannot go with it", o.file));
  // Inside a strict tree its supervisor charges every call, and the kernel would refuse
  // a second listener (sv_launch.h): nothing is supervised from here.
  bool nested = sv_inside_strict();
  if (nested && (strict || o.supervise == 1 || launch_needs_supervisor(kind))) {
    fmt::print(stderr, "bonsaictl run: note: already inside a strict tree: its supervisor holds {} to the outer "
               "service's caps; {} runs {}\n", kind.program, o.service,
               kind.kind == LaunchKind::Dynamic ? "under libbonsai.so, without a supervisor of its own"
                                                : "without limits of its own");
    strict = false;
  }
  bool supervise = !nested && !strict && (o.supervise == 1 || (o.supervise == -1 && launch_needs_supervisor(kind)));
  if (strict && kind.kind == LaunchKind::Setuid && geteuid() != 0)
    runtime_error(fmt::format("cannot run {} strictly: it {}, and a strict tree runs with no_new_privs (unless "
                              "started by root), which would take its privileges away", kind.program, kind.what));
  if (supervise && kind.kind == LaunchKind::Setuid)
    runtime_error(fmt::format("cannot supervise {}: it {}, and a supervised program runs with no_new_privs, which "
                              "would take its privileges away; run it with --no-supervise (NO LIMITS WILL APPLY)",
                              kind.program, kind.what));
  std::string lib = supervise ? "" : library_find();
  if (!supervise && !strict && !nested)
    if (std::string w = preload_warning(path); !w.empty()) fmt::print(stderr, "bonsaictl run: WARNING: {}\n", w);

  if (fleet_svc && !o.limits.empty()) usage_error("-l cannot change a fleet service's caps: edit its file");
  if (fleet_svc && ctl_other_user())  // its agent and trusted configuration are the caller's own
    usage_error(fmt::format("service '{}' has fleet caps: run it as its own user, not with --user", o.service));
  if (fleet_svc && o.scope == "process")
    usage_error("--scope process: a fleet service's caps hold all its processes together (scope service)");
  struct stat st{};
  if (!have_limits && stat(segment_path(o.service).c_str(), &st) != 0) {  // a new service without limits: misspelt?
    std::vector<std::string> have;
    try {
      have = services_list();
    } catch (const CtlError&) {
    }
    std::vector<std::string_view> names(have.begin(), have.end());
    if (std::string_view hint = closest_word(o.service, names); !hint.empty())
      fmt::print(stderr, "bonsaictl run: note: service '{}' is new and has no limits (did you mean '{}'?)\n", o.service,
                 hint);
  }
  auto seg = Segment::open(o.service, true, scope);
  // A program whose loader takes no build of the library runs without it (its loader
  // would say it cannot load it, or worse), NOT limited in stat, said in one line.
  bool foreign = !supervise && !strict && !nested && launch_foreign_libc(kind);
  if (foreign) {
    fmt::print(stderr, "bonsaictl run: {}: its loader {} takes no build of libbonsai.so (docs/reference/libc.md): it runs "
               "WITHOUT LIMITS (--supervise holds it to the limits)\n", kind.program, kind.loader.interp);
    mark_not_limited(seg.get(), path.c_str(), kSlotForeignLibc);
  }
  if (have_limits && !fleet_svc && host_resolve(limits))
    fmt::print(stderr, "bonsaictl run: WARNING: a ceil has no host capacity over its calls: held to its rate\n");
  std::string trusted_problem;  // the fleet service's trusted configuration not written: no agent serves it
  if (fleet_svc) seg->write_limits(fleet_publish(*seg, *fleet_svc, trusted_problem));
  else if (have_limits) seg->write_limits(file_svc ? (fleet_publish(*seg, *file_svc, trusted_problem), limits) : limits);
  if (!o.scope.empty() || !o.file.empty()) seg->set_scope(scope);
  SvPlan plan{o.service, {}, true};  // the limits in force: what the filter notifies, whether io_uring escapes
  CallMask protect_calls = 0;
  {
    uint64_t seq;
    seg->check();
    if (!seqlock_read(seg->seg().limits, plan.limits, seq, 1000)) runtime_error("cannot read the service's limits");
    // protect: a supervised program's protected reads are made and timed by its supervisor.
    seg->guarded([&] { protect_calls = seg->seg().protect.calls.load(std::memory_order_relaxed); });
    plan.protect = protect_calls & kSvTimedCalls;
  }
  seg.reset();
  if (fleet_svc) {  // no agent can run: the program is not started, as `load` fails
    std::string msg = trusted_problem;
    if (!msg.empty() || !fleet_agent_ensure(msg)) runtime_error("no fleet agent can serve the service: " + msg);
    if (!msg.empty()) fmt::print(stderr, "bonsaictl run: {}\n", msg);
  }

  if (supervise) {
    // The filter charges everything: a libbonsai.so in this tree (the caller's own
    // LD_PRELOAD) must not charge the same calls twice.
    if (const char* old = std::getenv("LD_PRELOAD")) setenv("LD_PRELOAD", preload_without_bonsai(old).c_str(), 1);
    setenv("BONSAI_LEAVE", "1", 1);
    unsetenv("BONSAI_SERVICE");
    unsetenv("BONSAI_SHM_FD");
    unsetenv("BONSAI_STRICT");  // an outer strict launch's mark is not this tree's
    const std::string& u = o.io_uring.empty() ? io_uring : o.io_uring;
    plan.deny_io_uring = u != "allow";
    if (CallMask untimed = protect_calls & ~kSvTimedCalls & kProtectReadCalls)
      fmt::print(stderr, "bonsaictl run: note: protect: {} of a supervised program ({}) {} not timed, only pread and "
                 "preadv (docs/reference/protect.md \"Supervised programs\")\n",
                 untimed == call_bit(CallId::read) ? "read" : untimed == call_bit(CallId::readv) ? "readv" : "read and readv",
                 path, untimed == (call_bit(CallId::read) | call_bit(CallId::readv)) ? "are" : "is");
    if (plan.limits.count == 0 && !plan.protect) {
      fmt::print(stderr, "bonsaictl run: note: service '{}' has no limits: {} runs unsupervised (a supervised "
                 "program sees only the limits named when it starts)\n", o.service, path);
    } else {
      sv_launch(plan);
    }
  } else {
    const char* old = std::getenv("LD_PRELOAD");
    std::string value =
        foreign ? preload_without_bonsai(old ? old : "") : preload_value(preload_entry(lib), old ? old : "");
    setenv("LD_PRELOAD", value.c_str(), 1);
    setenv("BONSAI_SERVICE", o.service.c_str(), 1);
    // Who supervises a static or Go program the tree executes: this bonsaictl.
    char self[4096];
    if (ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1); n > 0) {
      self[n] = '\0';
      setenv("BONSAI_CTL", self, 1);
    } else {
      fmt::print(stderr, "bonsaictl run: WARNING: cannot find its own path ({}): a static or Go program the "
                 "service executes will run WITHOUT LIMITS\n", std::strerror(errno));
    }
    unsetenv("BONSAI_LEAVE");  // run means join, whatever the caller's shell exports
    // The segment as an inherited descriptor, and its owner: a child that changes uid
    // (setpriv, su, runuser) finds it without a lookup by name or a permission check.
    setenv("BONSAI_SHM_UID", std::to_string(ctl_uid()).c_str(), 1);
    std::string why;
    if (int fd = segment_fd_handoff(segment_path(o.service), why); fd >= 0) {
      setenv("BONSAI_SHM_FD", std::to_string(fd).c_str(), 1);
    } else {
      unsetenv("BONSAI_SHM_FD");
      fmt::print(stderr, "bonsaictl run: WARNING: {}: a child that changes uid will run without limits\n", why);
    }
    if (std::string w = privdrop_warning(lib, geteuid()); !w.empty())
      fmt::print(stderr, "bonsaictl run: WARNING: {}\n", w);
    export_compression(compression);
    if (strict) {
      // Strict mode (docs/reference/supervised.md): the library marks its calls with this launch's mark;
      // the filter sends every unmarked data call the limits name to the supervisor.
      if (plan.limits.count == 0) {
        fmt::print(stderr, "bonsaictl run: note: service '{}' has no limits: --strict has nothing to hold {} to "
                   "(limits set later apply to what the library sees only)\n", o.service, path);
        unsetenv("BONSAI_STRICT");
      } else {
        plan.strict_mark = sv_strict_mark_new();
        setenv("BONSAI_STRICT", fmt::format("{:08x}:{}", plan.strict_mark, o.service).c_str(), 1);
        setenv("BONSAI_IO_URING", "deny", 1);  // the filter denies it; the library adds nothing
        plan.deny_io_uring = true;
        sv_launch(plan);
      }
    } else {
      unsetenv("BONSAI_STRICT");  // an outer strict launch's mark is not this tree's
      io_uring_export(o.io_uring, io_uring);  // both checked already
      io_uring_default(o.service, o.io_uring.empty() && io_uring.empty() && !std::getenv("BONSAI_IO_URING"),
                       limits_have_data(plan.limits));
    }
  }
  if (ctl_other_user()) become_user();  // --user: the command runs as that user
  std::vector<char*> argv;
  for (const auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(path.c_str(), argv.data());
  runtime_error(fmt::format("cannot run {}: {}", path, std::strerror(errno)));
}

}  // namespace

extern const Command kCmdRun{
    "run", "run [-c FILE] -s SERVICE [-l LIMIT]... [--scope process|service] [--io-uring deny|allow]\n"
    "           [--supervise|--no-supervise] [--strict] -- CMD [ARGS]",
    "Prepares SERVICE's segment (creating it if needed) and runs CMD under libbonsai:\n"
    "libbonsai.so (next to bonsaictl, or BONSAI_LIB) goes in front of LD_PRELOAD, whose\n"
    "other entries are kept, and BONSAI_SERVICE=SERVICE is set; children inherit both.\n",
    kOptions,
    "Without -c and -l an existing service keeps its limits (a new one has none).\n"
    "Warns when CMD is setuid (or static/Go with --no-supervise): LD_PRELOAD cannot reach it.\n"
    "A static or Go program the service starts later is supervised the same way.\n"
    "exit status: CMD's own once it runs; 1 runtime failure, 2 usage or configuration error\n",
    cmd_run};

}  // namespace bonsai::ctl
