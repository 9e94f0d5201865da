// SPDX-License-Identifier: MIT
// Strict YAML, whatever the schema (see yaml_strict.h).
#include "config/yaml_strict.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/core.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

namespace bonsai::ctl {
namespace {

// A first pass over the parser's events, before any tree is built: what yaml-cpp
// accepts silently but a configuration must not have. A key given twice in one
// mapping (yaml-cpp keeps the last one), a key that is not a plain name, a second
// document, and more than `max_nodes` nodes once aliases are expanded.
// Linear: keys of a mapping go into a hash map with their marks.
class StrictScan : public YAML::EventHandler {
 public:
  StrictScan(const std::string& file, size_t max_nodes, std::vector<Diag>& diags)
      : file_(file), max_nodes_(max_nodes), diags_(diags) {}
  struct TooBig {};  // thrown to stop the parser

  void OnDocumentStart(const YAML::Mark& m) override {
    if (++docs_ == 2)
      error(m, "a second YAML document (after '---' or '...'): a configuration file holds one document");
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t a) override { leaf(m, a, ""); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t a, const std::string& v) override {
    leaf(m, a, v);
  }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t a) override {
    slot(m, "an alias (*name)", nullptr);
    auto it = anchor_nodes_.find(a);
    count(m, it == anchor_nodes_.end() ? 1 : it->second);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t a, YAML::EmitterStyle::value) override {
    begin(m, a, false);
  }
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t a, YAML::EmitterStyle::value) override {
    begin(m, a, true);
  }
  void OnSequenceEnd() override { end(); }
  void OnMapEnd() override { end(); }

  int docs() const { return docs_; }

 private:
  struct Frame {
    bool map;
    bool want_key = true;
    YAML::anchor_t anchor = YAML::NullAnchor;
    size_t nodes = 1;  // of this subtree, aliases expanded (saturates past the bound)
    std::unordered_map<std::string, YAML::Mark> keys;
  };

  void error(const YAML::Mark& m, std::string msg) { diags_.push_back(diag_at(file_, m, std::move(msg))); }

  size_t add(size_t a, size_t b) const { return a + b > max_nodes_ + 1 ? max_nodes_ + 1 : a + b; }

  // Adds `n` expanded nodes to the current subtree and to the file's total.
  void count(const YAML::Mark& m, size_t n) {
    if (!stack_.empty()) stack_.back().nodes = add(stack_.back().nodes, n);
    total_ = add(total_, n);
    if (total_ > max_nodes_) {
      error(m, fmt::format("more than {} nodes once aliases are expanded: not a configuration", max_nodes_));
      throw TooBig{};
    }
  }

  // A node starts at `m`: if it is a key of the enclosing mapping, check it. `scalar`
  // is its text, or null for something that is not a plain name (`what`).
  void slot(const YAML::Mark& m, const char* what, const std::string* scalar) {
    if (stack_.empty() || !stack_.back().map) return;
    Frame& f = stack_.back();
    bool is_key = f.want_key;
    f.want_key = !f.want_key;
    if (!is_key) return;
    if (!scalar) return error(m, fmt::format("a key must be a plain name, not {}", what));
    auto [it, fresh] = f.keys.emplace(*scalar, m);
    if (!fresh)
      error(m, fmt::format("duplicate key '{}' (first at line {}, column {}): a key may appear once in a mapping",
                           *scalar, it->second.line + 1, it->second.column + 1));
  }

  void leaf(const YAML::Mark& m, YAML::anchor_t a, const std::string& v) {
    slot(m, "", &v);
    if (a != YAML::NullAnchor) anchor_nodes_[a] = 1;
    count(m, 1);
  }

  void begin(const YAML::Mark& m, YAML::anchor_t a, bool map) {
    slot(m, map ? "a mapping" : "a list", nullptr);
    total_ = add(total_, 1);
    stack_.push_back(Frame{map, true, a, 1, {}});
  }

  void end() {
    if (stack_.empty()) return;
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    if (f.anchor != YAML::NullAnchor) anchor_nodes_[f.anchor] = f.nodes;
    if (!stack_.empty()) stack_.back().nodes = add(stack_.back().nodes, f.nodes);
  }

  const std::string& file_;
  size_t max_nodes_;
  std::vector<Diag>& diags_;
  int docs_ = 0;
  size_t total_ = 0;
  std::vector<Frame> stack_;
  std::unordered_map<YAML::anchor_t, size_t> anchor_nodes_;
};

}  // namespace

Diag diag_at(const std::string& file, const YAML::Mark& mark, std::string message) {
  if (mark.is_null()) return Diag{file, 0, 0, std::move(message)};
  return Diag{file, mark.line + 1, mark.column + 1, std::move(message)};
}

bool yaml_strict_scan(const std::string& text, const std::string& file, size_t max_nodes, std::vector<Diag>& diags) {
  size_t first = diags.size();
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    StrictScan scan(file, max_nodes, diags);
    while (scan.docs() < 2 && parser.HandleNextDocument(scan)) {
    }
  } catch (const StrictScan::TooBig&) {
  } catch (const YAML::Exception& e) {
    diags.push_back(diag_at(file, e.mark, e.msg));
  }
  return diags.size() == first;
}

std::string yaml_file_read(const std::string& path, size_t max_bytes, std::string& text) {
  // O_NONBLOCK: opening a FIFO that has no writer must not hang; reads block again
  // below (a pipe's writer is the operator's, e.g. `check <(generate)`).
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return fmt::format("cannot read the file ({})", std::strerror(errno));
  struct stat st{};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    ::close(fd);
    return "cannot read the file (a directory)";
  }
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return fmt::format("the file has {} bytes, more than the {} a configuration may have",
                       static_cast<uint64_t>(st.st_size), max_bytes);
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  text.assign(max_bytes + 1, '\0');
  size_t used = 0;
  while (used < text.size()) {
    ssize_t n = ::read(fd, text.data() + used, text.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      ::close(fd);
      return fmt::format("cannot read the file ({})", std::strerror(e));
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  ::close(fd);
  if (used > max_bytes)
    return fmt::format("more than {} bytes: not a configuration (a device or an endless stream?)", max_bytes);
  text.resize(used);
  return "";
}

}  // namespace bonsai::ctl
