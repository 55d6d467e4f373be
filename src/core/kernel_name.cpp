// Shortening kernel names for people.
//
// A kernel's name is a type name in some compiler's spelling. It is read here by a small,
// forgiving recursive-descent reader over that text: qualified names are split into their
// components (namespaces, classes, enclosing functions, the entity itself), template arguments and
// parameter lists are read recursively, and everything the reader does not recognise is copied
// through with its spacing evened out. Nothing here throws on malformed text: an unmatched bracket
// is an ordinary character, and nesting past a fixed depth is copied verbatim.
#include <launchwatch/kernel_name.hpp>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace launchwatch::detail {
namespace {

/// Nesting deeper than this is copied verbatim, so hostile input cannot exhaust the stack.
constexpr int max_depth = 64;

constexpr std::string_view anonymous_namespace_spellings[] = {
    "(anonymous namespace)",  // clang, g++
    "{anonymous}",            // g++ in some contexts
    "<unnamed>",              // nvcc's front end
    "`anonymous namespace'",  // MSVC
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_identifier_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$';
}

bool is_identifier_char(char c) { return is_identifier_start(c) || is_digit(c); }

bool starts_with_at(std::string_view text, std::size_t at, std::string_view prefix) {
  return at <= text.size() && text.substr(at).substr(0, prefix.size()) == prefix;
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return starts_with_at(text, 0, prefix);
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

/// How many more characters the bracket and quote scanners may look at for one name.
///
/// A well-formed name is scanned a few times per nesting level, but every unclosed bracket or quote
/// sends a scan to the end of the text, so malformed text could cost time quadratic in its length.
/// Past the budget the scanners report nothing closed and the rest is copied through as text.
class scan_budget {
 public:
  explicit scan_budget(std::size_t characters) : left_(characters) {}

  /// Takes one character's worth of budget; false once it is spent.
  bool take() {
    if (left_ == 0) return false;
    --left_;
    return true;
  }

 private:
  std::size_t left_;
};

/// The index just past a quoted token starting at `at` (a string or character literal, or MSVC's
/// `` `...' `` quoting), or `at + 1` when the quote character opens nothing.
std::size_t skip_quoted(std::string_view text, std::size_t at, scan_budget& budget) {
  const char quote = text[at];
  if (quote == '"') {
    for (std::size_t i = at + 1; i < text.size() && budget.take(); ++i) {
      if (text[i] == '\\') {
        ++i;
      } else if (text[i] == '"') {
        return i + 1;
      }
    }
    return at + 1;
  }
  if (quote == '`') {
    for (std::size_t i = at + 1; i < text.size() && budget.take(); ++i) {
      if (text[i] == '\'') return i + 1;
    }
    return at + 1;
  }
  // A character literal is short: 'c', '\n', '\x3c', '\u003c'.
  const std::size_t limit = std::min(text.size(), at + 10);
  for (std::size_t i = at + 1; i < limit; ++i) {
    if (text[i] == '\\') {
      ++i;
    } else if (text[i] == '\'') {
      return i > at + 1 ? i + 1 : at + 1;
    }
  }
  return at + 1;
}

bool is_quote(char c) { return c == '"' || c == '\'' || c == '`'; }

char closer_of(char open) {
  switch (open) {
    case '(':
      return ')';
    case '[':
      return ']';
    case '{':
      return '}';
    case '<':
      return '>';
    default:
      return '\0';
  }
}

/// The index of the bracket closing the one at `open`, or npos when it is never closed.
///
/// Angle brackets are the ambiguous ones: inside parentheses they are not counted (there they are
/// comparisons, or templates the recursive reading of the parenthesised text will find again), an
/// arrow `->` closes nothing, and a parenthesis that arrives while angle brackets are open treats
/// those as less-than signs.
std::size_t find_close(std::string_view text, std::size_t open, scan_budget& budget) {
  std::string expected;
  for (std::size_t i = open; i < text.size() && budget.take();) {
    const char c = text[i];
    if (is_quote(c) && i != open) {
      i = skip_quoted(text, i, budget);
      continue;
    }
    const char top = expected.empty() ? '\0' : expected.back();
    if (c == '(' || c == '[' || c == '{' || (c == '<' && top != ')')) {
      expected.push_back(closer_of(c));
    } else if (c == '>') {
      if (top == '>' && !(i > 0 && text[i - 1] == '-')) {
        expected.pop_back();
        if (expected.empty()) return i;
      }
    } else if (c == ')' || c == ']' || c == '}') {
      while (!expected.empty() && expected.back() == '>') expected.pop_back();
      if (expected.empty() || expected.back() != c) return std::string_view::npos;
      expected.pop_back();
      if (expected.empty()) return i;
    }
    ++i;
  }
  return std::string_view::npos;
}

/// Splits `text` at the commas that are not inside brackets.
std::vector<std::string_view> split_top_level(std::string_view text, scan_budget& budget) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (is_quote(c)) {
      i = skip_quoted(text, i, budget);
      continue;
    }
    if (c == '(' || c == '[' || c == '{' || c == '<') {
      const std::size_t close = find_close(text, i, budget);
      i = close == std::string_view::npos ? i + 1 : close + 1;
      continue;
    }
    if (c == ',') {
      parts.push_back(trim(text.substr(start, i - start)));
      start = i + 1;
    }
    ++i;
  }
  parts.push_back(trim(text.substr(start)));
  return parts;
}

/// Appends pieces of a name with single spaces between words and none before `*`, `&`, `[` and
/// closing brackets, so that every compiler's spacing reads the same.
class spaced_text {
 public:
  void space() { space_pending_ = true; }

  void append(std::string_view piece) {
    if (piece.empty()) return;
    if (space_pending_ && !text_.empty()) {
      const bool glue_before =
          std::string_view("*&,)]>[").find(piece.front()) != std::string_view::npos;
      const bool glue_after = std::string_view("(<[").find(text_.back()) != std::string_view::npos;
      if (!glue_before && !glue_after) text_ += ' ';
    }
    space_pending_ = false;
    text_ += piece;
  }

  std::string take() { return std::move(text_); }

 private:
  std::string text_;
  bool space_pending_ = false;
};

/// What a component of a qualified name is.
enum class component_kind {
  named,                // an identifier, perhaps with template arguments
  anonymous_namespace,  // in any compiler's spelling
  unnamed,              // a lambda or an unnamed struct, class, union or enum
  other_scope,          // anything else that scopes a name (MSVC's `` `f'::`2' ``)
};

/// One component of a qualified name: a namespace, class, enclosing function, or the entity itself.
struct component {
  component_kind kind = component_kind::named;
  std::string_view text;  // the component as written
  std::string_view name;  // identifier, or label of an unnamed type ("lambda", "unnamed struct")
  std::string_view arguments;  // inside the template's angle brackets
  bool has_arguments = false;
  std::string_view parameters;  // an unnamed type's parameters (a lambda's, where spelled)
  bool has_parameters = false;
  std::string_view location;  // where an unnamed type was written (clang), "file.cpp:12:3"
  bool is_function = false;   // an enclosing function: a parameter list follows, then `::`
};

enum class style {
  inner,     // inside another name: namespaces dropped, templates keep their brackets
  balanced,  // name_format::balanced at the top
  brief,     // name_format::brief at the top
};

class name_reader {
 public:
  explicit name_reader(std::size_t name_size) : budget_(256 * name_size + 4096) {}

  /// Any text, read as a type: qualified names are shortened, the rest copied with spacing evened.
  std::string expression(std::string_view text, int depth) {
    if (depth > max_depth) return std::string(text);
    spaced_text out;
    for (std::size_t i = 0; i < text.size();) {
      const char c = text[i];
      if (is_space(c)) {
        out.space();
        ++i;
        continue;
      }
      if (is_quote(c)) {
        const std::size_t end = skip_quoted(text, i, budget_);
        out.append(text.substr(i, end - i));
        i = end;
        continue;
      }
      if (is_digit(c) || (c == '-' && i + 1 < text.size() && is_digit(text[i + 1]))) {
        std::size_t end = i + 1;
        while (end < text.size() && (is_identifier_char(text[end]) || text[end] == '.')) ++end;
        out.append(text.substr(i, end - i));
        i = end;
        continue;
      }
      std::size_t after = i;
      if (std::optional<std::vector<component>> chain = read_chain(text, after, depth)) {
        out.append(render(*chain, style::inner, depth));
        i = after;
        continue;
      }
      if (c == '(' || c == '[' || c == '{') {
        const std::size_t close = find_close(text, i, budget_);
        if (close != std::string_view::npos) {
          out.append(text.substr(i, 1));
          out.append(list(text.substr(i + 1, close - i - 1), ", ", depth + 1));
          out.append(text.substr(close, 1));
          i = close + 1;
          continue;
        }
      }
      out.append(text.substr(i, 1));
      ++i;
    }
    return out.take();
  }

  /// A comma-separated list, each part read as an expression and joined with `separator`.
  std::string list(std::string_view text, std::string_view separator, int depth) {
    if (depth > max_depth) return std::string(text);
    std::string out;
    const std::vector<std::string_view> parts = split_top_level(text, budget_);
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (i > 0) out += separator;
      out += expression(parts[i], depth + 1);
    }
    return out;
  }

  /// Reads a qualified name starting at `at`; on success moves `at` past it.
  std::optional<std::vector<component>> read_chain(std::string_view text, std::size_t& at,
                                                   int depth) {
    std::size_t i = at;
    if (starts_with_at(text, i, "::")) i += 2;  // a global qualifier
    std::vector<component> chain;
    std::optional<component> part = read_component(text, i, depth);
    while (part) {
      i = read_function_suffix(text, i, *part);
      chain.push_back(*part);
      if (!starts_with_at(text, i, "::")) break;
      std::size_t next = i + 2;
      part = read_component(text, next, depth);
      if (part) i = next;  // a dangling `::` is left to the caller
    }
    if (chain.empty()) return std::nullopt;
    at = i;
    return chain;
  }

  /// A qualified name, rendered in `how`.
  std::string render(const std::vector<component>& chain, style how, int depth) {
    const component& entity = chain.back();
    switch (entity.kind) {
      case component_kind::unnamed:
        return unnamed(chain, how, depth);
      case component_kind::anonymous_namespace:
      case component_kind::other_scope:
        return expression_verbatim(entity.text);
      case component_kind::named:
        break;
    }
    if (starts_with(entity.name, "__nv_") && ends_with(entity.name, "_wrapper_t") &&
        entity.has_arguments) {
      if (std::optional<std::string> lambda = nvcc_extended_lambda(entity, how, depth)) {
        return *lambda;
      }
    }
    if (how == style::brief) return std::string(entity.name);
    std::string out;
    // A namespace never has template arguments, so a scope that has them is a class template, and
    // its arguments are what tell `ops<float>::add` from `ops<double>::add`.
    for (std::size_t i = 0; i + 1 < chain.size(); ++i) {
      const component& scope = chain[i];
      if (scope.kind == component_kind::named && scope.has_arguments && !scope.is_function) {
        out += with_arguments(scope, depth);
        out += "::";
      }
    }
    if (how == style::inner) {
      out += with_arguments(entity, depth);
      return out;
    }
    out += entity.name;
    if (entity.has_arguments && !trim(entity.arguments).empty()) {
      out += " | ";
      out += list(entity.arguments, " | ", depth + 1);
    }
    return out;
  }

 private:
  static std::string expression_verbatim(std::string_view text) {
    spaced_text out;
    std::size_t i = 0;
    while (i < text.size()) {
      if (is_space(text[i])) {
        out.space();
        ++i;
        continue;
      }
      std::size_t end = i;
      while (end < text.size() && !is_space(text[end])) ++end;
      out.append(text.substr(i, end - i));
      i = end;
    }
    return out.take();
  }

  std::string with_arguments(const component& part, int depth) {
    if (!part.has_arguments) return std::string(part.name);
    return fmt::format("{}<{}>", part.name, list(part.arguments, ", ", depth + 1));
  }

  std::optional<component> read_component(std::string_view text, std::size_t& at, int depth) {
    if (at >= text.size() || depth > max_depth) return std::nullopt;
    component part;
    for (std::string_view spelling : anonymous_namespace_spellings) {
      if (starts_with_at(text, at, spelling)) {
        part.kind = component_kind::anonymous_namespace;
        part.text = text.substr(at, spelling.size());
        at += spelling.size();
        return part;
      }
    }
    const char c = text[at];
    if (c == '(' || c == '<') return read_bracketed_unnamed(text, at);
    if (c == '`') {
      const std::size_t end = skip_quoted(text, at, budget_);
      if (end == at + 1) return std::nullopt;
      part.kind = component_kind::other_scope;
      part.text = text.substr(at, end - at);
      at = end;
      return part;
    }
    if (!is_identifier_start(c)) return std::nullopt;
    std::size_t end = at;
    while (end < text.size() && is_identifier_char(text[end])) ++end;
    const std::string_view identifier = text.substr(at, end - at);

    for (std::string_view keyword : {"struct", "class", "enum", "union", "typename"}) {
      if (identifier == keyword && end < text.size() && is_space(text[end])) {
        std::size_t next = end;
        while (next < text.size() && is_space(text[next])) ++next;
        std::optional<component> named = read_component(text, next, depth + 1);
        if (named) at = next;
        return named;
      }
    }
    if (identifier == "lambda" && starts_with_at(text, end, " [")) {
      return read_edg_lambda(text, at, end);
    }
    if (identifier == "operator") end = operator_end(text, end);

    part.text = text.substr(at, end - at);
    part.name = part.text;
    if (end < text.size() && text[end] == '<') {
      const std::size_t close = find_close(text, end, budget_);
      if (close != std::string_view::npos) {
        part.has_arguments = true;
        part.arguments = text.substr(end + 1, close - end - 1);
        part.text = text.substr(at, close + 1 - at);
        end = close + 1;
      }
    }
    at = end;
    return part;
  }

  /// Where the name of `operator...` ends, given the index just after the word `operator`.
  static std::size_t operator_end(std::string_view text, std::size_t at) {
    if (starts_with_at(text, at, "()") || starts_with_at(text, at, "[]")) return at + 2;
    std::size_t end = at;
    while (end < text.size() &&
           std::string_view("+-*/%^&|~!=<>,").find(text[end]) != std::string_view::npos) {
      ++end;
    }
    return end;
  }

  /// g++'s `<lambda(int)>` and `<unnamed struct>`, MSVC's `<lambda_1>`, clang's
  /// `(lambda at f.cpp:3:12)` and `(unnamed struct at f.cpp:4:1)`.
  std::optional<component> read_bracketed_unnamed(std::string_view text, std::size_t& at) {
    const std::string_view opening = text.substr(at + 1);
    if (!starts_with(opening, "lambda") && !starts_with(opening, "unnamed ") &&
        !(text[at] == '(' && starts_with(opening, "anonymous "))) {
      return std::nullopt;  // checked first so ordinary brackets are not scanned twice
    }
    const std::size_t close = find_close(text, at, budget_);
    if (close == std::string_view::npos) return std::nullopt;
    const std::string_view inner = text.substr(at + 1, close - at - 1);
    component part;
    part.kind = component_kind::unnamed;
    part.text = text.substr(at, close + 1 - at);
    if (text[at] == '(') {
      const std::size_t where = inner.find(" at ");
      const bool unnamed_type = starts_with(inner, "lambda") || starts_with(inner, "unnamed ") ||
                                starts_with(inner, "anonymous ");
      if (!unnamed_type || where == std::string_view::npos) return std::nullopt;
      part.name = inner.substr(0, where);
      part.location = inner.substr(where + 4);
    } else if (starts_with(inner, "lambda")) {
      part.name = inner.substr(0, 6);
      if (starts_with_at(inner, 6, "(") && inner.back() == ')') {
        part.has_parameters = true;
        part.parameters = inner.substr(7, inner.size() - 8);
      }
    } else if (starts_with(inner, "unnamed ")) {
      part.name = inner;
    } else {
      return std::nullopt;
    }
    at = close + 1;
    return part;
  }

  /// nvcc's front end: `lambda [](int)->void`. Its return type runs to the end of the text it
  /// was found in (a whole name, or one template argument), so the lambda takes all of it.
  std::optional<component> read_edg_lambda(std::string_view text, std::size_t& at,
                                           std::size_t after_word) {
    std::size_t i = after_word + 1;
    const std::size_t captures_end = find_close(text, i, budget_);
    if (captures_end == std::string_view::npos) return std::nullopt;
    i = captures_end + 1;
    component part;
    part.kind = component_kind::unnamed;
    part.name = text.substr(at, 6);
    if (i < text.size() && text[i] == '(') {
      const std::size_t close = find_close(text, i, budget_);
      if (close == std::string_view::npos) return std::nullopt;
      part.has_parameters = true;
      part.parameters = text.substr(i + 1, close - i - 1);
      i = close + 1;
    }
    if (starts_with_at(text, i, "->") || starts_with_at(text, i, " mutable")) i = text.size();
    part.text = text.substr(at, i - at);
    at = i;
    return part;
  }

  /// Recognises an enclosing function's parameter list and qualifiers followed by `::`
  /// (`run<float>(float)::`, `operator()(int) const::`, `m() &&::`); returns where the component
  /// ends, past them when they are there.
  std::size_t read_function_suffix(std::string_view text, std::size_t at, component& part) {
    if (at >= text.size() || text[at] != '(' || part.kind != component_kind::named) return at;
    const std::size_t close = find_close(text, at, budget_);
    if (close == std::string_view::npos) return at;
    std::size_t i = close + 1;
    for (bool more = true; more;) {
      more = false;
      while (i < text.size() && is_space(text[i])) ++i;
      for (std::string_view qualifier : {"const", "volatile", "noexcept", "&&", "&"}) {
        const bool word_ends = !is_identifier_char(qualifier.front()) ||
                               i + qualifier.size() >= text.size() ||
                               !is_identifier_char(text[i + qualifier.size()]);
        if (starts_with_at(text, i, qualifier) && word_ends) {
          i += qualifier.size();
          more = true;
          break;
        }
      }
      if (!more && starts_with_at(text, i, "[with ")) {
        const std::size_t end = find_close(text, i, budget_);
        if (end != std::string_view::npos) {
          i = end + 1;
          more = true;
        }
      }
    }
    if (!starts_with_at(text, i, "::")) return at;
    part.is_function = true;
    return i;
  }

  /// A lambda or unnamed type: its label, its parameters (`balanced` and inner only), the function
  /// it was written in, and the place it was written at.
  std::string unnamed(const std::vector<component>& chain, style how, int depth) {
    const component& entity = chain.back();
    std::string out(entity.name);
    if (how != style::brief && entity.has_parameters && !trim(entity.parameters).empty()) {
      out += fmt::format("({})", list(entity.parameters, ", ", depth + 1));
    }
    for (std::size_t i = chain.size() - 1; i-- > 0;) {
      if (!chain[i].is_function) continue;
      std::string_view function = chain[i].name;
      // `operator()` alone says little: the class it belongs to is the useful part.
      if (starts_with(function, "operator") && i > 0 &&
          chain[i - 1].kind == component_kind::named) {
        out += fmt::format(" in {}::{}", chain[i - 1].name, function);
      } else {
        out += fmt::format(" in {}", function);
      }
      break;
    }
    if (!entity.location.empty()) {
      out += fmt::format(" at {}", short_location(entity.location, how == style::brief));
    }
    return out;
  }

  /// `/src/demo/f.cpp:12:3` reads `f.cpp:12:3`, or `f.cpp:12` without the column.
  static std::string_view short_location(std::string_view location, bool drop_column) {
    const std::size_t slash = location.find_last_of("/\\");
    if (slash != std::string_view::npos) location.remove_prefix(slash + 1);
    if (drop_column) {
      const std::size_t last = location.rfind(':');
      if (last != std::string_view::npos && last > 0) {
        const std::size_t line = location.rfind(':', last - 1);
        const auto all_digits = [](std::string_view s) {
          if (s.empty()) return false;
          for (char c : s) {
            if (!is_digit(c)) return false;
          }
          return true;
        };
        if (line != std::string_view::npos && all_digits(location.substr(last + 1)) &&
            all_digits(location.substr(line + 1, last - line - 1))) {
          location = location.substr(0, last);
        }
      }
    }
    return location;
  }

  /// nvcc wraps an extended (`__device__` or `__host__ __device__`) lambda in
  /// `__nv_dl_wrapper_t<__nv_dl_tag<F, function, index>, ...>` or
  /// `__nv_hdl_wrapper_t<..., __nv_dl_tag<F, function, index>, R(Args...)>`: the tag names the
  /// enclosing function and the host-device wrapper's last argument is the call signature.
  std::optional<std::string> nvcc_extended_lambda(const component& wrapper, style how, int depth) {
    const std::vector<std::string_view> arguments = split_top_level(wrapper.arguments, budget_);
    for (std::string_view argument : arguments) {
      if (!starts_with(argument, "__nv_dl_")) continue;
      std::size_t at = 0;
      std::optional<std::vector<component>> tag = read_chain(argument, at, depth + 1);
      if (!tag || !tag->back().has_arguments) continue;
      const std::vector<std::string_view> tag_arguments =
          split_top_level(tag->back().arguments, budget_);
      std::string out = "lambda";
      if (how != style::brief && starts_with(wrapper.name, "__nv_hdl_")) {
        const std::string_view signature = arguments.back();
        const std::size_t open = signature.find('(');
        if (open != std::string_view::npos && signature.back() == ')' &&
            find_close(signature, open, budget_) == signature.size() - 1) {
          const std::string_view parameters =
              signature.substr(open + 1, signature.size() - open - 2);
          if (!trim(parameters).empty())
            out += fmt::format("({})", list(parameters, ", ", depth + 1));
        }
      }
      if (tag_arguments.size() >= 2) {
        std::string_view function = tag_arguments[1];
        if (starts_with(function, "&")) function = trim(function.substr(1));
        std::size_t function_at = 0;
        if (std::optional<std::vector<component>> name =
                read_chain(function, function_at, depth + 1)) {
          out += fmt::format(" in {}", render(*name, style::brief, depth + 1));
        }
      }
      return out;
    }
    return std::nullopt;
  }

  scan_budget budget_;
};

}  // namespace
}  // namespace launchwatch::detail

namespace launchwatch {

std::string format_kernel_name(std::string_view name, name_format format) {
  if (format == name_format::full) return std::string(name);
  const std::string_view text = detail::trim(name);
  detail::name_reader reader(text.size());
  std::size_t end = 0;
  if (std::optional<std::vector<detail::component>> chain = reader.read_chain(text, end, 0);
      chain && end == text.size()) {
    return reader.render(
        *chain, format == name_format::brief ? detail::style::brief : detail::style::balanced, 0);
  }
  return reader.expression(text, 0);
}

}  // namespace launchwatch
