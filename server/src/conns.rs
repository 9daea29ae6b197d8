//! Connections: the accept loop, the bounds every connection lives under, and the stop.
//!
//! A client that sends nothing, half its headers or half its body would otherwise hold a connection
//! (and a file) for ever, and enough of them lock every other client out: the token is checked only
//! once the headers are in. So each connection is in one of three phases, and two of them have a clock:
//! waiting for a request's headers (from the accept, or from the first byte after an idle spell:
//! `--header-timeout`), idle between requests (`--idle-timeout`), or busy with a request (no clock here:
//! its body has `--body-timeout` from the end of the headers, and the request `--request-timeout`). A
//! connection whose clock runs out is closed. At most `--max-connections` are open at once, fewer than
//! the open-file limit allows so that the database always has files left. At the cap, a new
//! connection closes the one that has waited longest for its client (idle, or owing its headers), so
//! stalled clients cannot hold others out even for one clock; when every connection is busy, the new
//! one waits, and the kernel queues the rest. HTTP/1.1 only, as before.
//!
//! At `SIGINT` or `SIGTERM` the loop stops accepting, closes every connection that is not busy (even
//! one halfway through its headers: nothing of its request has started), lets busy ones finish their
//! request, and after `--shutdown-grace` drops whatever is left. A change is answered only once it is
//! durable, so a request dropped there was never acknowledged. This module must not know the
//! endpoints: it hands every request to the router.

use std::future::Future;
use std::io;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::http::{HeaderValue, Request, Response, StatusCode, header};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::{Instant, Sleep};
use tower::ServiceExt as _;

/// The bounds on connections and on the stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionBounds {
    /// Most connections open at once; `None` takes as many as the open-file limit leaves room for
    /// (see [`connection_room`]), at most [`DEFAULT_MAX_CONNECTIONS`].
    pub max_connections: Option<usize>,
    /// The longest a connection may take to send a request's headers, from its accept or from the
    /// first byte after an idle spell.
    pub header_timeout: Duration,
    /// The longest a request's body may take to arrive, from the end of its headers.
    pub body_timeout: Duration,
    /// The longest a connection may stay open between requests.
    pub idle_timeout: Duration,
    /// The longest the requests in flight may take to finish after `SIGTERM`.
    pub shutdown_grace: Duration,
}

impl Default for ConnectionBounds {
    /// The defaults of `statecraft serve`: the connections the file limit leaves room for (at most
    /// 1024), 10 s for headers, 30 s for a body, 60 s idle, 10 s to stop.
    fn default() -> ConnectionBounds {
        ConnectionBounds {
            max_connections: None,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

/// The most connections open at once when no number is given, if the file limit leaves room.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// Files kept for everything but connections: the database (its file, journal and shared memory, or
/// a PostgreSQL connection and its reconnections), the listener, the runtime, stdio and logs.
const RESERVED_FILES: u64 = 64;

/// The open-file limit of this process (`ulimit -n`), or `None` when there is none.
pub(crate) fn file_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        rustix::process::getrlimit(rustix::process::Resource::Nofile).current
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// The most connections a file limit leaves room for: the limit less the files the server keeps for
/// itself, or half the limit when that is more (a limit of 64 still serves 32).
pub(crate) fn connection_room(files: Option<u64>) -> usize {
    match files {
        None => usize::MAX,
        Some(files) => {
            let room = files.saturating_sub(RESERVED_FILES).max(files / 2);
            usize::try_from(room).unwrap_or(usize::MAX)
        }
    }
}

/// What the clock of a waiting connection is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Waiting {
    /// A request's headers (or its first byte, on a new connection).
    Headers,
    /// Nothing: the connection is idle between requests.
    Idle,
}

#[derive(Clone, Copy, Debug)]
enum Phase {
    /// Waiting for the client since `since`.
    Waiting { what: Waiting, since: Instant },
    /// Requests are being answered: as many as this (more than one only for the moment hyper takes
    /// a pipelined request before it drops the body of the one before).
    Busy(usize),
}

/// The phase of one connection, shared by its socket (bytes arriving), its service (requests
/// starting) and its response bodies (requests ending).
#[derive(Debug)]
struct Activity {
    phase: Mutex<Phase>,
    changed: Notify,
    bounds: ConnectionBounds,
    /// Set when the connection is closed to make room for a new one.
    evicted: AtomicBool,
}

impl Activity {
    fn new(bounds: ConnectionBounds) -> Activity {
        Activity {
            phase: Mutex::new(Phase::Waiting {
                what: Waiting::Headers,
                since: Instant::now(),
            }),
            changed: Notify::new(),
            bounds,
            evicted: AtomicBool::new(false),
        }
    }

    /// Since when the connection has been waiting for its client, if it is.
    fn waiting_since(&self) -> Option<Instant> {
        match self.phase() {
            Phase::Waiting { since, .. } => Some(since),
            Phase::Busy(_) => None,
        }
    }

    /// Closes a waiting connection to make room for a new one; false if it has started a request
    /// meanwhile.
    fn evict(&self) -> bool {
        let phase = self.phase.lock().expect("phase lock");
        if matches!(*phase, Phase::Busy(_)) {
            return false;
        }
        self.evicted.store(true, Ordering::SeqCst);
        drop(phase);
        self.changed.notify_one();
        true
    }

    /// A request starts. (An evicted connection may still take one in the moment before it is
    /// dropped; dropping it drops the request unanswered, as a closed connection would.)
    fn start(&self) {
        let mut phase = self.phase.lock().expect("phase lock");
        *phase = match *phase {
            Phase::Busy(requests) => Phase::Busy(requests + 1),
            Phase::Waiting { .. } => Phase::Busy(1),
        };
        drop(phase);
        self.changed.notify_one();
    }

    /// A request ends; with none left, the idle clock starts.
    fn end(&self) {
        let mut phase = self.phase.lock().expect("phase lock");
        *phase = match *phase {
            Phase::Busy(requests) if requests > 1 => Phase::Busy(requests - 1),
            _ => Phase::Waiting {
                what: Waiting::Idle,
                since: Instant::now(),
            },
        };
        drop(phase);
        self.changed.notify_one();
    }

    fn phase(&self) -> Phase {
        *self.phase.lock().expect("phase lock")
    }

    /// Bytes came in: an idle connection starts a request, and its headers get their own clock.
    fn arrived(&self) {
        let mut phase = self.phase.lock().expect("phase lock");
        if let Phase::Waiting {
            what: Waiting::Idle,
            ..
        } = *phase
        {
            *phase = Phase::Waiting {
                what: Waiting::Headers,
                since: Instant::now(),
            };
            drop(phase);
            self.changed.notify_one();
        }
    }

    /// Whether the connection may be closed at once at a stop: no request of it has started.
    fn is_waiting(&self) -> bool {
        matches!(self.phase(), Phase::Waiting { .. })
    }

    /// Resolves when the clock of the current phase runs out, with what the client failed to do.
    async fn expired(&self) -> &'static str {
        loop {
            if self.evicted.load(Ordering::SeqCst) {
                return "waiting longest when a new connection needed room (--max-connections)";
            }
            let deadline = match self.phase() {
                Phase::Busy(_) => None,
                Phase::Waiting { what, since } => Some(match what {
                    Waiting::Headers => (
                        since + self.bounds.header_timeout,
                        "no complete request headers within --header-timeout",
                    ),
                    Waiting::Idle => (since + self.bounds.idle_timeout, "idle for --idle-timeout"),
                }),
            };
            match deadline {
                Some((at, why)) if Instant::now() >= at => return why,
                Some((at, _)) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(at) => {}
                        () = self.changed.notified() => {}
                    }
                }
                None => self.changed.notified().await,
            }
        }
    }
}

/// Ends a request's busy phase when dropped: when its response body is sent, or when the request
/// is dropped unanswered.
#[derive(Debug)]
struct BusyGuard(Arc<Activity>);

impl BusyGuard {
    fn start(activity: &Arc<Activity>) -> BusyGuard {
        activity.start();
        BusyGuard(Arc::clone(activity))
    }
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// A response body that holds its request's busy phase until it is sent.
#[derive(Debug)]
struct Tracked {
    body: Body,
    _busy: BusyGuard,
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// The error a request body gives when it did not arrive within `--body-timeout`.
#[derive(Debug, thiserror::Error)]
#[error("the body did not arrive within {0:?} (--body-timeout)")]
pub(crate) struct BodyTimedOut(Duration);

/// Whether an error, or any error behind it, is a body that timed out.
pub(crate) fn is_body_timeout(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(error) = next {
        if error.is::<BodyTimedOut>() {
            return true;
        }
        next = error.source();
    }
    false
}

/// A request body that fails once `--body-timeout` has passed since the end of its headers.
#[derive(Debug)]
struct Timed {
    body: Incoming,
    deadline: Pin<Box<Sleep>>,
    limit: Duration,
}

impl HttpBody for Timed {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.body).poll_frame(cx) {
            return Poll::Ready(frame.map(|frame| frame.map_err(Into::into)));
        }
        match self.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyTimedOut(self.limit))))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A socket that tells its connection's [`Activity`] when bytes arrive.
#[derive(Debug)]
struct Watched {
    stream: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let read = Pin::new(&mut self.stream).poll_read(cx, buf);
        if matches!(read, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.arrived();
        }
        read
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// Accepts connections until `shutdown` resolves, then stops as the module doc says. Returns when
/// every connection is closed, or when the grace time has run out (at the instant returned).
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    bounds: ConnectionBounds,
    max_connections: usize,
    shutdown: impl Future<Output = ()>,
) -> Instant {
    let permits = Arc::new(Semaphore::new(max_connections));
    let (stop, stopping) = watch::channel(false);
    let mut connections = JoinSet::new();
    let mut open: Vec<Weak<Activity>> = Vec::new();
    let mut shutdown = pin!(shutdown);
    let mut out_of_files = false;
    loop {
        let stream = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    out_of_files = false;
                    stream
                }
                Err(error) if is_connection_error(&error) => continue,
                Err(error) => {
                    // Out of files (other than for connections) or memory: wait for some to free.
                    if !out_of_files {
                        tracing::warn!(%error, "cannot accept connections for now");
                        out_of_files = true;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        // At the cap, the connection that has waited longest for its client makes room: stalled
        // clients cannot hold the others out for a whole clock. With every connection busy, the new
        // one waits for a permit (one file over the cap at most: the kernel's queue holds the rest).
        if permits.available_permits() == 0 {
            evict_longest_waiting(&mut open);
        }
        let permit = tokio::select! {
            () = &mut shutdown => break,
            permit = Arc::clone(&permits).acquire_owned() => permit.expect("the semaphore is never closed"),
        };
        while connections.try_join_next().is_some() {}
        let activity = Arc::new(Activity::new(bounds));
        open.retain(|activity| activity.strong_count() > 0);
        open.push(Arc::downgrade(&activity));
        let (router, stopping) = (router.clone(), stopping.clone());
        connections.spawn(async move {
            connection(stream, activity, router, stopping).await;
            drop(permit);
        });
    }
    drop(listener);
    let deadline = Instant::now() + bounds.shutdown_grace;
    let _ = stop.send(true);
    tracing::info!(
        connections = connections.len(),
        "stopping: no new connections; the requests in flight finish"
    );
    let finished = tokio::time::timeout_at(deadline, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if finished.is_err() {
        tracing::warn!(
            connections = connections.len(),
            "the grace time (--shutdown-grace) ran out: closing the connections left unanswered"
        );
        connections.shutdown().await;
    }
    deadline
}

/// Closes the open connection that has waited longest for its client (idle, or owing its headers).
fn evict_longest_waiting(open: &mut Vec<Weak<Activity>>) {
    open.retain(|activity| activity.strong_count() > 0);
    let mut candidates: Vec<(Instant, Arc<Activity>)> = open
        .iter()
        .filter_map(Weak::upgrade)
        .filter(|activity| !activity.evicted.load(Ordering::SeqCst))
        .filter_map(|activity| Some((activity.waiting_since()?, activity)))
        .collect();
    candidates.sort_by_key(|(since, _)| *since);
    for (_, activity) in candidates {
        if activity.evict() {
            tracing::debug!("closing the connection waiting longest to make room for a new one");
            return;
        }
    }
}

/// Errors of one connection that came and went before its accept: the next one may be fine.
fn is_connection_error(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// Serves one connection until it ends, its clock runs out, or the server stops.
async fn connection(
    stream: TcpStream,
    activity: Arc<Activity>,
    router: Router,
    mut stopping: watch::Receiver<bool>,
) {
    let bounds = activity.bounds;
    let io = TokioIo::new(Watched {
        stream,
        activity: Arc::clone(&activity),
    });
    let service_activity = Arc::clone(&activity);
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let busy = BusyGuard::start(&service_activity);
        let request = request.map(|body| Timed {
            body,
            deadline: Box::pin(tokio::time::sleep(bounds.body_timeout)),
            limit: bounds.body_timeout,
        });
        let router = router.clone();
        async move {
            let response = router.oneshot(request).await?;
            Ok::<_, std::convert::Infallible>(finish(response, busy))
        }
    });
    let mut http = hyper::server::conn::http1::Builder::new();
    // The clocks are this module's: hyper's own header clock would also cut idle connections short.
    http.header_read_timeout(None);
    let mut served = pin!(http.serve_connection(io, service));
    let mut stopped = *stopping.borrow();
    if stopped && activity.is_waiting() {
        return;
    }
    loop {
        tokio::select! {
            result = served.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(%error, "connection ended");
                }
                return;
            }
            why = activity.expired() => {
                tracing::debug!(why, "connection closed");
                return;
            }
            changed = stopping.changed(), if !stopped => {
                stopped = changed.is_err() || *stopping.borrow();
                if stopped {
                    if activity.is_waiting() {
                        return;
                    }
                    served.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

/// The response with its busy phase attached; a body that timed out also closes the connection,
/// since the rest of it was never read.
fn finish(response: Response<Body>, busy: BusyGuard) -> Response<Tracked> {
    let timed_out = response.status() == StatusCode::REQUEST_TIMEOUT;
    let mut response = response.map(|body| Tracked { body, _busy: busy });
    if timed_out {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_limit_leaves_room_for_the_database() {
        assert_eq!(connection_room(Some(256)), 192);
        assert_eq!(connection_room(Some(1024)), 960);
        assert_eq!(connection_room(Some(64)), 32);
        assert_eq!(connection_room(Some(0)), 0);
        assert_eq!(connection_room(None), usize::MAX);
    }

    fn waiting(activity: &Activity) -> Option<(Waiting, Instant)> {
        match activity.phase() {
            Phase::Waiting { what, since } => Some((what, since)),
            Phase::Busy(_) => None,
        }
    }

    #[test]
    fn bytes_trickling_in_never_restart_the_header_clock() {
        let activity = Arc::new(Activity::new(ConnectionBounds::default()));
        let (what, accepted) = waiting(&activity).expect("waiting");
        assert_eq!(what, Waiting::Headers, "a new connection owes its headers");
        std::thread::sleep(Duration::from_millis(5));
        activity.arrived();
        assert_eq!(waiting(&activity), Some((Waiting::Headers, accepted)));
        // A pipelined request starts before the one before it is dropped: still busy after one end.
        let first = BusyGuard::start(&activity);
        let second = BusyGuard::start(&activity);
        drop(first);
        assert_eq!(waiting(&activity), None, "busy: no clock");
        drop(second);
        let (what, idle_since) = waiting(&activity).expect("idle");
        assert_eq!(what, Waiting::Idle);
        std::thread::sleep(Duration::from_millis(5));
        activity.arrived();
        let (what, since) = waiting(&activity).expect("headers");
        assert_eq!(what, Waiting::Headers);
        assert!(
            since > idle_since,
            "the header clock starts at the first byte"
        );
    }

    #[test]
    fn the_connection_waiting_longest_makes_room_and_a_busy_one_never_does() {
        let bounds = ConnectionBounds::default();
        let oldest = Arc::new(Activity::new(bounds));
        std::thread::sleep(Duration::from_millis(5));
        let busy_and_older = Arc::new(Activity::new(bounds));
        let _request = BusyGuard::start(&busy_and_older);
        std::thread::sleep(Duration::from_millis(5));
        let newest = Arc::new(Activity::new(bounds));
        let gone = Arc::new(Activity::new(bounds));
        let mut open: Vec<Weak<Activity>> = [&busy_and_older, &newest, &oldest, &gone]
            .iter()
            .map(|activity| Arc::downgrade(activity))
            .collect();
        drop(gone);
        evict_longest_waiting(&mut open);
        assert_eq!(open.len(), 3, "closed connections leave the list");
        assert!(oldest.evicted.load(Ordering::SeqCst));
        assert!(!newest.evicted.load(Ordering::SeqCst));
        assert!(
            !busy_and_older.evict(),
            "a request under way is never cut off"
        );
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let why = runtime.block_on(oldest.expired());
        assert!(why.contains("--max-connections"), "{why}");
    }

    #[test]
    fn a_body_timeout_is_found_behind_other_errors() {
        let wrapped = axum::Error::new(BodyTimedOut(Duration::from_secs(1)));
        assert!(is_body_timeout(&wrapped));
        assert!(!is_body_timeout(&io::Error::other("reset")));
    }
}
