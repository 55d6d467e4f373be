// Everything launchwatch offers a program, in one include.
#pragma once

#include <launchwatch/config.hpp>
#include <launchwatch/dry_run.hpp>
#include <launchwatch/kernel_name.hpp>
#include <launchwatch/observe.hpp>
#include <launchwatch/profile.hpp>
