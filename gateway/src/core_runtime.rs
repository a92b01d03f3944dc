//! The money path's own runtime. Claims, holds, checkouts and the rest of the reservation
//! group run their handlers here, on threads of their own, so a join storm filling the main
//! runtime's run queue does not stand between a hold and each of its database round trips: the
//! operating system shares the cores between the two runtimes' threads, and these mostly sleep,
//! so they are scheduled at once when a reply arrives.

use std::future::Future;

use tokio::runtime::{Builder, Handle, Runtime};
use tokio::task::JoinHandle;

/// Worker threads of the money path: enough to use both cores of a small machine, few enough
/// that they never crowd out the main runtime.
const THREADS: usize = 2;

pub struct CoreRuntime {
    // An `Option` only so that `Drop` can hand it to `shutdown_background`, which may be called
    // from async code (a plain drop of a runtime there panics).
    runtime: Option<Runtime>,
    handle: Handle,
}

impl CoreRuntime {
    pub fn start() -> std::io::Result<Self> {
        let runtime = Builder::new_multi_thread()
            .worker_threads(THREADS)
            .thread_name("floodgate-core")
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        Ok(Self {
            runtime: Some(runtime),
            handle,
        })
    }

    pub fn spawn<F>(&self, work: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.handle.spawn(work)
    }
}

impl Drop for CoreRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
