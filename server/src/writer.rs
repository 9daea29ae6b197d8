//! Group commit: one thread makes every game's writes durable, many at a time.
//!
//! Games hand their writes to the writer and wait. The writer takes every write that is waiting, makes
//! them durable in one database transaction (one sync of the disk for all of them), and answers each
//! game with what became of its own write. While one transaction is being synced, the next writes
//! gather, so the more games write at once the more each transaction carries: this is what lets many
//! games commit durably at a rate one sync per change could not reach. This module must not look into
//! writes: the storage does.

use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use statecraft_saves::{Storage, StorageError, Write, Written};

/// The most writes one transaction carries.
const MAX_GROUP: usize = 512;

/// How long receipts are kept for retries with the same `Idempotency-Key`.
pub(crate) const RECEIPT_LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);

/// How often old receipts are dropped.
const RECEIPT_SWEEP: Duration = Duration::from_secs(10 * 60);

/// What a waiting game hears back.
pub(crate) type Reply = Result<Written, Arc<StorageError>>;

struct Request {
    write: Write,
    reply: SyncSender<Reply>,
}

/// The handle games write through. Cloning it is cheap; the writer stops once every handle is dropped
/// and the writes already sent are done.
#[derive(Clone, Debug)]
pub(crate) struct Writer {
    sender: Sender<Request>,
}

impl Writer {
    /// Starts the writer thread over `storage`.
    pub(crate) fn start(storage: Arc<dyn Storage>) -> (Writer, JoinHandle<()>) {
        let (sender, receiver) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("statecraft-writer".to_owned())
            .spawn(move || run(&*storage, &receiver))
            .expect("the writer thread starts");
        (Writer { sender }, thread)
    }

    /// Makes one write durable with whatever else is waiting, and says what became of it.
    pub(crate) fn write(&self, write: Write) -> Reply {
        let (reply, answer) = mpsc::sync_channel(1);
        let gone = || {
            Arc::new(StorageError::Database(
                "the writer has stopped (the server is shutting down)".to_owned(),
            ))
        };
        self.sender
            .send(Request { write, reply })
            .map_err(|_| gone())?;
        answer.recv().map_err(|_| gone())?
    }
}

fn run(storage: &dyn Storage, receiver: &Receiver<Request>) {
    let mut last_sweep = Instant::now();
    while let Ok(first) = receiver.recv() {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match receiver.try_recv() {
                Ok(request) => group.push(request),
                Err(_) => break,
            }
        }
        let (writes, replies): (Vec<Write>, Vec<SyncSender<Reply>>) = group
            .into_iter()
            .map(|request| (request.write, request.reply))
            .unzip();
        let started = Instant::now();
        match storage.write(&writes) {
            Ok(results) => {
                tracing::debug!(
                    writes = writes.len(),
                    micros = started.elapsed().as_micros() as u64,
                    "group committed"
                );
                for (reply, result) in replies.into_iter().zip(results) {
                    let _ = reply.send(Ok(result));
                }
            }
            Err(error) => {
                tracing::error!(writes = writes.len(), %error, "a group commit failed");
                let error = Arc::new(error);
                for reply in replies {
                    let _ = reply.send(Err(Arc::clone(&error)));
                }
            }
        }
        if last_sweep.elapsed() > RECEIPT_SWEEP {
            last_sweep = Instant::now();
            let before = crate::db::now() - RECEIPT_LIFETIME.as_secs() as i64;
            match storage.forget_receipts(before) {
                Ok(dropped) => tracing::debug!(dropped, "old receipts dropped"),
                Err(error) => tracing::warn!(%error, "old receipts could not be dropped"),
            }
        }
    }
}
