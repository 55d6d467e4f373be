// Everything launchwatch offers a program, in one include.
#pragma once

#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/attribute/count.hpp>
#include <launchwatch/attribute/kernel_table.hpp>
#include <launchwatch/attribute/merge.hpp>
#include <launchwatch/attribute/render.hpp>
#include <launchwatch/attribute/report_files.hpp>
#include <launchwatch/attribute/scope.hpp>
#include <launchwatch/attribute/summary.hpp>
#include <launchwatch/config.hpp>
#include <launchwatch/cuda_bridge.hpp>
#include <launchwatch/dry_run.hpp>
#include <launchwatch/errors.hpp>
#include <launchwatch/kernel_name.hpp>
#include <launchwatch/logger.hpp>
#include <launchwatch/observe.hpp>
#include <launchwatch/profile.hpp>
#include <launchwatch/runtime/client.hpp>
