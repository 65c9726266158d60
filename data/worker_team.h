// The DataLoader's worker threads: one producer thread opening one OpenMP region for the
// team's whole life, whose threads sleep on a condition variable between epochs.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "common/error.h"
#include "data/loader_epoch_state.h"

namespace frugal::data {

// The threads that make an epoch's samples: a producer thread that opens ONE OpenMP parallel
// region of num_workers threads for the team's whole life; inside it every thread waits on a
// condition variable for a job (an epoch) and runs State::work() on it. Without
// persistent_workers each epoch has its own team, joined when the epoch ends; with it, the
// DataLoader keeps one team for its whole life. Idle threads sleep on the condition variable:
// there is no OpenMP barrier between epochs, where libgomp's threads would spin (its default
// wait policy) and take the CPU from the threads doing the work.
class WorkerTeam {
 public:
  explicit WorkerTeam(int workers) : workers_(workers), thread_([this] { run(); }) {}
  ~WorkerTeam() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      quit_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  // Starts `job` on the team; a frugal::Error if the team is still busy with another epoch.
  void submit(std::shared_ptr<LoaderEpoch::State> job) {
    std::lock_guard<std::mutex> lock(mutex_);
    FRUGAL_CHECK(
        !job_,
        "DataLoader (persistent_workers): the workers are still making another epoch's batches; "
        "finish or destroy that epoch before starting the next");
    job_ = std::move(job);
    ++generation_;
    changed_.notify_all();
  }
  // Waits until no thread of the team works on a job any more.
  void wait_idle() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return !job_ && active_ == 0; });
  }

 private:
  void run() {
    if (workers_ == 1) {
      serve();
      return;
    }
#pragma omp parallel num_threads(workers_)
    serve();
  }

  // One team thread: each job once, until told to quit.
  void serve() {
    std::uint64_t served = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      changed_.wait(lock, [&] { return quit_ || (job_ && generation_ != served); });
      if (quit_) return;
      served = generation_;
      std::shared_ptr<LoaderEpoch::State> job = job_;
      ++active_;
      lock.unlock();
      job->work();
      lock.lock();
      // The job's references go while the lock is held, so the epoch waiting in wait_idle()
      // stays the last owner of its state (and of an epoch's own team: never this thread).
      job.reset();
      // The job is over once all its samples are claimed and nobody is still making them; a
      // thread that wakes later finds no job, or the next one.
      if (--active_ == 0) job_.reset();
      changed_.notify_all();
    }
  }

  int workers_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::shared_ptr<LoaderEpoch::State> job_;
  std::uint64_t generation_ = 0;
  int active_ = 0;
  bool quit_ = false;
  std::thread thread_;
};

}  // namespace frugal::data
