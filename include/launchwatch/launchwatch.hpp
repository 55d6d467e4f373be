// Everything launchwatch offers a program, in one include.
#pragma once

#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/attribute/count.hpp>
#include <launchwatch/attribute/scope.hpp>
#include <launchwatch/config.hpp>
#include <launchwatch/cuda_bridge.hpp>
#include <launchwatch/dry_run.hpp>
#include <launchwatch/errors.hpp>
#include <launchwatch/kernel_name.hpp>
#include <launchwatch/logger.hpp>
#include <launchwatch/observe.hpp>
#include <launchwatch/profile.hpp>
#include <launchwatch/report/chrome_trace.hpp>
#include <launchwatch/report/diff.hpp>
#include <launchwatch/report/folded.hpp>
#include <launchwatch/report/kernel_table.hpp>
#include <launchwatch/report/merge.hpp>
#include <launchwatch/report/pass_record.hpp>
#include <launchwatch/report/report_files.hpp>
#include <launchwatch/report/report_writer.hpp>
#include <launchwatch/report/summary.hpp>
#include <launchwatch/report/summary_json.hpp>
#include <launchwatch/report/tree.hpp>
#include <launchwatch/runtime/client.hpp>
