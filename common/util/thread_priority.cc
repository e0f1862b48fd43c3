#include "common/util/thread_priority.h"

#include <thread>

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#endif

namespace gtco::util {

#ifdef __linux__
namespace {
/// The calling thread's id: Linux keeps nice values per thread (PRIO_PROCESS with a thread id).
id_t ThreadId() { return static_cast<id_t>(syscall(SYS_gettid)); }
}  // namespace

bool MakeCurrentThreadBackground() { return setpriority(PRIO_PROCESS, ThreadId(), 19) == 0; }

int CurrentThreadNice() {
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, ThreadId());
  return errno == 0 ? nice : 0;
}
#else
bool MakeCurrentThreadBackground() { return false; }
int CurrentThreadNice() { return 0; }
#endif

void RunInBackground(const std::function<void()>& work) {
  std::thread background([&work] {
    MakeCurrentThreadBackground();
    work();
  });
  background.join();
}

}  // namespace gtco::util
