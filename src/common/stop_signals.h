// SIGTERM and SIGINT, taken by one thread with sigwait rather than by a handler in whichever
// thread the kernel picks.
//
//   int main() {
//     eoc::BlockStopSignals();          // first, so that every thread started later inherits it
//     ... start threads ...
//     int signal = eoc::WaitForStopSignal();   // SIGTERM or SIGINT
//     ... stop cleanly ...
//   }
#pragma once

#include <csignal>

namespace eoc {

// Blocks SIGTERM and SIGINT in the calling thread (and so in the threads it starts afterwards).
void BlockStopSignals();

// Waits until SIGTERM or SIGINT arrives; returns which. BlockStopSignals() must have run first.
int WaitForStopSignal();

}  // namespace eoc
