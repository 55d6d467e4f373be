// CUPTI's functions the bridge calls, looked up at run time in the library cupti_places.hpp finds
// (docs/design.md §8, "CUPTI at run time"). The bridge is compiled with CUPTI's headers, for their
// types, and links no CUPTI: so a binary built with the bridge starts where CUPTI is missing, and
// a wheel uses whichever CUPTI the environment it is installed in has.
#pragma once

#include <cupti.h>

#include <string>

#include "cupti_places.hpp"

namespace launchwatch::detail::cuda_bridge {

// Every CUPTI function the bridge calls, once: X(member, CUPTI's name).
#define LAUNCHWATCH_CUPTI_FUNCTIONS(X)                                            \
  X(get_version, cuptiGetVersion)                                                 \
  X(get_result_string, cuptiGetResultString)                                      \
  X(subscribe, cuptiSubscribe_v2)                                                 \
  X(unsubscribe, cuptiUnsubscribe)                                                \
  X(finalize, cuptiFinalize)                                                      \
  X(enable_callback, cuptiEnableCallback)                                         \
  X(activity_enable, cuptiActivityEnable)                                         \
  X(activity_disable, cuptiActivityDisable)                                       \
  X(activity_flush_all, cuptiActivityFlushAll)                                    \
  X(activity_get_next_record, cuptiActivityGetNextRecord)                         \
  X(activity_get_num_dropped_records, cuptiActivityGetNumDroppedRecords)          \
  X(activity_register_callbacks, cuptiActivityRegisterCallbacks)                  \
  X(activity_register_timestamp_callback, cuptiActivityRegisterTimestampCallback) \
  X(activity_set_attribute, cuptiActivitySetAttribute)                            \
  X(get_device_id, cuptiGetDeviceId)                                              \
  X(get_graph_id, cuptiGetGraphId)                                                \
  X(get_graph_exec_id, cuptiGetGraphExecId)                                       \
  X(get_graph_node_id, cuptiGetGraphNodeId)

/// The loaded CUPTI: each function the bridge calls, and where the library came from.
struct cupti_functions {
#define LAUNCHWATCH_CUPTI_MEMBER(member, function) decltype(&::function) member = nullptr;
  LAUNCHWATCH_CUPTI_FUNCTIONS(LAUNCHWATCH_CUPTI_MEMBER)
#undef LAUNCHWATCH_CUPTI_MEMBER
  /// The library's file.
  std::string path;
  cupti_source source = cupti_source::toolkit;
};

/// Finds and opens CUPTI (open_cupti over cupti_places_here, for the CUPTI major version built
/// against) and looks up every function, the first time it is called in the process; after that
/// returns the same table. Throws cuda_bridge_unavailable: cupti_not_found as open_cupti does,
/// incompatible when the library lacks a function (naming it and the file); a later call tries
/// again. Thread safety: any thread.
const cupti_functions& load_cupti();

/// The table load_cupti() filled. Precondition: load_cupti() has returned (the engine calls it
/// before it subscribes, so CUPTI's callbacks and the bridge's calls all come after).
/// Cost: one load. Thread safety: any thread.
const cupti_functions& cupti() noexcept;

}  // namespace launchwatch::detail::cuda_bridge
