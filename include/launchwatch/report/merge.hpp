// One report of a job that ran as several processes (one per rank, as torchrun and mpirun start
// them): their summaries merged, each process a top-level row.
#pragma once

#include <span>
#include <string>

#include <launchwatch/report/summary.hpp>

namespace launchwatch {

/// One process's summary and the label its rows go under in a merged report ("rank 0").
struct process_summary {
  std::string label;
  pass_summary summary;
};

/// Merges the summaries of several processes into one that accounts for all of their device time.
///
/// Each process becomes a top-level scope named by its label, holding that process's scopes and,
/// as kernels launched directly in it, its launches outside any scope; its devices and streams keep
/// their own rows, marked with the label (two ranks' `cuda device 0` are two devices). Counts,
/// windows, idle time and overlap add up, so the merged tree's 100% is every process's window
/// together, with each one's identity (its rows, plus its idle time, minus its overlap, make its
/// window) kept. Processes are kept in the order given. When they asked for different timing, the
/// merged `timing` is the one that measured most (deferred, then resolved, then none).
///
/// Why a row per process rather than summing equal scope paths across ranks: ranks of one job run
/// the same code, so summed rows would hide the rank that is slow, which is what a person reading a
/// distributed job's report looks for first. Equal scopes stay comparable one level down.
///
/// Throws summary_error when `processes` is empty or two of them have the same label. Thread
/// safety: a pure function.
pass_summary merge_summaries(std::span<const process_summary> processes);

/// The label of this process within a job started by a launcher that numbers its processes:
/// "rank N" from `RANK` (torchrun, torch.distributed), `OMPI_COMM_WORLD_RANK` (Open MPI),
/// `PMI_RANK` (MPICH, Intel MPI) or `SLURM_PROCID` (srun), the first one set; empty when none is.
/// What the programs that write summaries put in pass_summary::process, so `launchwatch report
/// --merge` labels each rank by its own number whatever order the files are given in.
std::string process_label_from_environment();

}  // namespace launchwatch
