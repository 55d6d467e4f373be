// NVTX ranges as launchwatch scopes (nvtx_ranges.hpp).

#include "nvtx_ranges.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <launchwatch/attribute/scope.hpp>

#include "attribute/scope_nvtx.hpp"
#include "attribute/scope_paths.hpp"
#include "range_names.hpp"

namespace launchwatch::detail {
namespace {

/// One thread's open ranges: a stack of scope tokens per domain (null is NVTX's default domain).
struct thread_ranges {
  std::unordered_map<nvtxDomainHandle_t, std::vector<scope_token>> stacks;
  std::string buffer;  // a wide message's UTF-8
};
thread_local thread_ranges ranges;

int push(nvtxDomainHandle_t domain, std::string_view name) noexcept {
  if (in_scope_nvtx_call()) return 0;  // this copy's own scope: it records itself
  try {
    auto& stack = ranges.stacks[domain];
    stack.push_back(enter_scope(name));
    return static_cast<int>(stack.size() - 1);
  } catch (...) {
    return -1;  // out of memory: the range is lost, the program goes on
  }
}

/// A range of another domain open inside the one being left, as it was.
struct inner_range {
  std::size_t depth;
  path_id path;
  scope_token* token;  // in its domain's stack
};

/// Leaves the scope of `token`, a range already taken off its domain's stack, without ending the
/// ranges of other domains opened inside it (review 2026-12-01b, finding 11). NVTX keeps a stack
/// per domain, so popping one domain's range never closes another's; the thread has one path, and
/// leave_scope ends every scope inside the one it leaves. So those ranges end with it and are
/// entered again at once, in their order, below what remains: a range that was `a/b` goes on as
/// `b`. One entered below another thread's path (push_domain_range_under) is entered below that
/// path again. Cost: leave_scope's when nothing is open inside (the usual case); otherwise a scan
/// of the thread's open ranges and a scope entered per range kept.
void leave_range(scope_token token) noexcept {
  if (token.serial == 0) return;
  const std::optional<open_scope> left = find_open_scope(token);
  if (!left || left->depth + 1 >= open_scope_depth()) {
    leave_scope(token);
    return;
  }
  std::vector<inner_range> inner;
  try {
    for (auto& [domain, stack] : ranges.stacks) {
      for (scope_token& range : stack) {
        const std::optional<open_scope> open = find_open_scope(range);
        if (open && open->depth > left->depth) inner.push_back({open->depth, open->path, &range});
      }
    }
  } catch (...) {
    inner.clear();  // out of memory: they end with it, as before
  }
  std::sort(inner.begin(), inner.end(),
            [](const inner_range& a, const inner_range& b) { return a.depth < b.depth; });
  leave_scope(token);
  std::size_t below_depth = left->depth;
  path_id below_path = left->path;
  for (const inner_range& range : inner) {
    try {
      const path_node node = read_path(range.path);
      // Entered below the range right under it (its path's parent is that range's path), or below
      // another thread's path (enter_scope_under), which stays its parent.
      const bool under_another_thread =
          range.depth == below_depth + 1 && node.parent != below_path;
      *range.token = enter_scope_under(under_another_thread ? node.parent : current_path(),
                                       node.name);
    } catch (...) {
      *range.token = scope_token{};  // lost: its pop does nothing
    }
    below_depth = range.depth;
    below_path = range.path;
  }
}

int pop(nvtxDomainHandle_t domain) noexcept {
  if (in_scope_nvtx_call()) return 0;
  const auto found = ranges.stacks.find(domain);
  if (found == ranges.stacks.end() || found->second.empty()) return -1;
  const scope_token token = found->second.back();
  found->second.pop_back();
  leave_range(token);
  return static_cast<int>(found->second.size());
}

int push_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) noexcept {
  if (in_scope_nvtx_call()) return 0;
  try {
    return push(domain, range_name(attributes, ranges.buffer, nvtx_registry::get()));
  } catch (...) {
    return -1;
  }
}

int NVTX_API range_push_a(const char* message) { return push(nullptr, ascii_range_name(message)); }
int NVTX_API range_push_w(const wchar_t* message) {
  try {
    return push(nullptr, wide_range_name(message, ranges.buffer));
  } catch (...) {
    return -1;
  }
}
int NVTX_API range_push_ex(const nvtxEventAttributes_t* attributes) { return push_ex(nullptr, attributes); }
int NVTX_API range_pop() { return pop(nullptr); }
int NVTX_API domain_range_push_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  return push_ex(domain, attributes);
}
int NVTX_API domain_range_pop(nvtxDomainHandle_t domain) { return pop(domain); }

nvtxDomainHandle_t NVTX_API domain_create_a(const char* name) {
  try {
    return nvtx_registry::get().create_domain(ascii_range_name(name));
  } catch (...) {
    return nullptr;
  }
}
nvtxDomainHandle_t NVTX_API domain_create_w(const wchar_t* name) {
  try {
    std::string buffer;
    return nvtx_registry::get().create_domain(wide_range_name(name, buffer));
  } catch (...) {
    return nullptr;
  }
}
void NVTX_API domain_destroy(nvtxDomainHandle_t) {}  // handles stay valid: ranges may still be open
void NVTX_API initialize(const void*) {}

nvtxStringHandle_t NVTX_API domain_register_string_a(nvtxDomainHandle_t, const char* text) {
  try {
    return nvtx_registry::get().register_string(ascii_range_name(text));
  } catch (...) {
    return nullptr;
  }
}
nvtxStringHandle_t NVTX_API domain_register_string_w(nvtxDomainHandle_t, const wchar_t* text) {
  try {
    std::string buffer;
    return nvtx_registry::get().register_string(wide_range_name(text, buffer));
  } catch (...) {
    return nullptr;
  }
}

/// Points slot `id` of a module's table at `handler`, where the table has that slot.
template <class F>
void fill(NvtxFunctionTable table, unsigned int size, unsigned int id, F handler) {
  if (id < size && table[id] != nullptr) *table[id] = reinterpret_cast<NvtxFunctionPointer>(handler);
}

}  // namespace

int push_domain_range(nvtxDomainHandle_t domain, std::string_view name) noexcept {
  return push(domain, name);
}

int push_domain_range_under(nvtxDomainHandle_t domain, path_id parent,
                            std::string_view name) noexcept {
  try {
    auto& stack = ranges.stacks[domain];
    stack.push_back(enter_scope_under(parent, name));
    return static_cast<int>(stack.size() - 1);
  } catch (...) {
    return -1;
  }
}

int pop_domain_ranges_to(nvtxDomainHandle_t domain, int depth) noexcept {
  const auto found = ranges.stacks.find(domain);
  if (found == ranges.stacks.end()) return 0;
  auto& stack = found->second;
  const std::size_t keep = depth < 0 ? 0 : static_cast<std::size_t>(depth);
  if (stack.size() <= keep) return static_cast<int>(stack.size());
  // The outermost of them first: leave_scope ends every scope still open inside it at once, and
  // leave_range enters other domains' ranges inside it again.
  const scope_token outermost = stack[keep];
  stack.resize(keep);
  leave_range(outermost);
  return static_cast<int>(keep);
}

int fill_nvtx_export_table(NvtxGetExportTableFunc_t get_export_table) noexcept {
  if (get_export_table == nullptr) return 0;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) ||
      callbacks->GetModuleFunctionTable == nullptr) {
    return 0;
  }
  NvtxFunctionTable core = nullptr;
  unsigned int core_size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) == 0 || core == nullptr) {
    return 0;
  }
  fill(core, core_size, NVTX_CBID_CORE_RangePushA, &range_push_a);
  fill(core, core_size, NVTX_CBID_CORE_RangePushW, &range_push_w);
  fill(core, core_size, NVTX_CBID_CORE_RangePushEx, &range_push_ex);
  fill(core, core_size, NVTX_CBID_CORE_RangePop, &range_pop);

  NvtxFunctionTable core2 = nullptr;
  unsigned int core2_size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size) != 0 && core2 != nullptr) {
    fill(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, &domain_range_push_ex);
    fill(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, &domain_range_pop);
    fill(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, &domain_create_a);
    fill(core2, core2_size, NVTX_CBID_CORE2_DomainCreateW, &domain_create_w);
    fill(core2, core2_size, NVTX_CBID_CORE2_DomainDestroy, &domain_destroy);
    fill(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, &domain_register_string_a);
    fill(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringW, &domain_register_string_w);
    fill(core2, core2_size, NVTX_CBID_CORE2_Initialize, &initialize);
  }
  return 1;
}

}  // namespace launchwatch::detail
