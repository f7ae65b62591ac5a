// The signal guard's plumbing shared by the Session loop: a self-pipe written by the handler.
#pragma once

namespace rocplay::session::detail {

// The read end of the self-pipe, or -1 when install_signal_guard() was never called. The pipe
// becomes readable at the first caught signal and stays so (nobody drains it), so every live
// Session notices it.
int signal_fd();
// The first caught signal, 0 when none.
int pending_signal();
// Sessions alive: with none, a signal takes its default action at once.
void session_started();
void session_ended();
// Forgets the caught signal and empties the pipe, so the next signal is caught afresh.
void acknowledge_signal();

} // namespace rocplay::session::detail
