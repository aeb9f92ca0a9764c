//! The wind beside the snow: the solver on another device, stepping on a thread of its own
//! while the snow's device runs the frame.
//!
//! Frame `n` on the snow's side: the field of the wind steps due up to frame `n − 1` crosses
//! into the mirror on the snow's device, the snow of frame `n` samples it, and the wind steps
//! due in frame `n` are handed to the wind's thread. The thread runs them on its device (the
//! pressure solve waits for its device there, not on the snow's side) and reads the new field
//! into pinned host memory; the next frame's hand-off writes that memory into the mirror
//! without waiting, in order on the snow's queue. So the two devices overlap and the snow
//! samples the same time level as on one device ([`super::coupling`]'s lag).
//!
//! Where the wind's device also steps a share of the parcels, the steps wait behind a gate
//! ([`WindGate`]) until that share's frame is done: the share is what the snow's frame waits
//! for, and the wind only the next frame. (The solver then runs on a second queue of the
//! share's own context, so that the share's next frame can run beside its steps:
//! [`WindField::new`](super::coupling::WindField::new).)
//!
//! Two pinned buffers take turns: while one is being written into the mirror (its write's
//! event kept with it), the thread fills the other, and waits for that event before it reuses
//! the first. Nothing on the snow's side waits for the wind except the hand-off of frame
//! `n + 1`, for the steps of frame `n`.

use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use opencl3::event::Event;

use crate::cl::{Context, DeviceBuffer, PinnedBuffer, wait_for};
use crate::wind::Solver;

use super::{Error, Result};

/// The field's pinned copies that take turns (one being filled, one being written).
const STAGING_BUFFERS: usize = 2;

/// A request to the wind's thread: run `steps` wind steps (once `gate` passes the events to
/// start after, or is dropped), then read the field into `into` once `after` (the last writes
/// out of it) have completed.
struct Request {
    steps: u32,
    into: PinnedBuffer<[f32; 4]>,
    after: Vec<Event>,
    gate: Option<Receiver<Vec<Event>>>,
}

/// Holds the start of wind steps handed over with [`WindBeside::request_gated`]: they wait
/// until [`open`](Self::open) names what they start after, or until the gate is dropped.
#[derive(Default)]
pub struct WindGate {
    sender: Option<Sender<Vec<Event>>>,
    device: usize,
}

impl WindGate {
    /// The OpenCL index of the wind's device while steps wait behind the gate.
    pub fn device(&self) -> Option<usize> {
        self.sender.as_ref().map(|_| self.device)
    }

    /// Lets the steps start once `after` (events of one context) have completed.
    pub fn open(&mut self, after: Vec<Event>) {
        if let Some(sender) = self.sender.take() {
            // A thread that is gone says so at the next answer.
            let _ = sender.send(after);
        }
    }
}

/// The wind's thread's answer: the steps' pressure iterations and wall time, and the field in
/// `field`.
struct Answer {
    iterations: u64,
    seconds: f64,
    field: PinnedBuffer<[f32; 4]>,
}

/// The solver on its own device and thread, and the mirror of its field on the snow's device.
pub struct WindBeside {
    solver: Arc<Mutex<Solver>>,
    /// The solver's device, for errors (`1 (NVIDIA H100 …)`).
    device: String,
    requests: Option<Sender<Request>>,
    answers: Receiver<Result<Answer>>,
    worker: Option<JoinHandle<()>>,
    /// Whether a request was sent and its answer not yet taken.
    pending: bool,
    /// Pressure-solver iterations over the steps whose answer arrived.
    iterations: u64,
    /// The wall time of those steps on the wind's thread, s.
    step_seconds: f64,
    /// Fields that arrived and are not yet on their way to the mirror.
    arrived: VecDeque<PinnedBuffer<[f32; 4]>>,
    /// Pinned buffers not with the thread, oldest first, each with the events of its last
    /// writes into the mirrors.
    idle: VecDeque<(PinnedBuffer<[f32; 4]>, Vec<Event>)>,
    /// The field on the snow's device, then on each device that steps a share of the
    /// parcels ([`add_mirror`](Self::add_mirror)).
    mirrors: Vec<DeviceBuffer<[f32; 4]>>,
}

impl WindBeside {
    /// Starts the thread for `solver` (started up: its field is the first the snow reads),
    /// with the mirror on the snow's `context`. `device` names the solver's device in errors.
    pub fn new(context: &Context, mut solver: Solver, device: String) -> Result<Self> {
        let field = solver.velocity()?;
        let mirror = DeviceBuffer::from_slice(context, &field)?;
        let mut idle = VecDeque::new();
        for _ in 0..STAGING_BUFFERS {
            idle.push_back((
                PinnedBuffer::new(solver.context(), field.len())?,
                Vec::new(),
            ));
        }
        let solver = Arc::new(Mutex::new(solver));
        let (requests, inbox) = channel::<Request>();
        let (outbox, answers) = channel();
        let shared = Arc::clone(&solver);
        let worker = std::thread::Builder::new()
            .name("snowsim-wind".into())
            .spawn(move || serve(&shared, &inbox, &outbox))
            .map_err(|e| Error::Internal(format!("cannot start the wind's thread: {e}")))?;
        Ok(Self {
            solver,
            device,
            requests: Some(requests),
            answers,
            worker: Some(worker),
            pending: false,
            iterations: 0,
            step_seconds: 0.0,
            arrived: VecDeque::new(),
            idle,
            mirrors: vec![mirror],
        })
    }

    /// Adds a mirror of the field on `context` (a device that steps a share of the parcels),
    /// written with the snow's after each answer; returns its index for
    /// [`mirrors`](Self::mirrors). Blocking.
    pub fn add_mirror(&mut self, context: &Context) -> Result<usize> {
        let field = self.solver()?.velocity()?;
        self.mirrors
            .push(DeviceBuffer::from_slice(context, &field)?);
        Ok(self.mirrors.len() - 1)
    }

    /// Hands `steps` wind steps (at least one) to the thread, without waiting; takes the
    /// answer to the last request first ([`receive`](Self::receive)).
    pub fn request(&mut self, steps: u32) -> Result<()> {
        self.send(steps, None)
    }

    /// As [`request`](Self::request), but the steps wait behind the returned gate (the
    /// wind's device is `device`): until it is opened with the events they start after, or
    /// dropped. Drop it before anything waits for the steps.
    pub fn request_gated(&mut self, steps: u32, device: usize) -> Result<WindGate> {
        let (sender, gate) = channel();
        self.send(steps, Some(gate))?;
        Ok(WindGate {
            sender: Some(sender),
            device,
        })
    }

    /// Hands a request to the thread.
    fn send(&mut self, steps: u32, gate: Option<Receiver<Vec<Event>>>) -> Result<()> {
        self.receive()?;
        let (into, after) = self
            .idle
            .pop_front()
            .ok_or_else(|| Error::Internal("no pinned buffer is free for the wind".into()))?;
        let request = Request {
            steps,
            into,
            after,
            gate,
        };
        let sent = self
            .requests
            .as_ref()
            .is_some_and(|r| r.send(request).is_ok());
        if !sent {
            return Err(self.stopped());
        }
        self.pending = true;
        Ok(())
    }

    /// Waits for the answer to the last request, if one is out, and keeps its field for
    /// [`forward`](Self::forward).
    pub fn receive(&mut self) -> Result<()> {
        if !self.pending {
            return Ok(());
        }
        self.pending = false;
        let answer = match self.answers.recv() {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => return Err(self.on_device(e)),
            Err(_) => return Err(self.stopped()),
        };
        self.iterations += answer.iterations;
        self.step_seconds += answer.seconds;
        self.arrived.push_back(answer.field);
        Ok(())
    }

    /// Starts writing the fields that arrived into the mirrors, without waiting, in order on
    /// each device's queue (the newest last, so it is the one the snow reads).
    pub fn forward(&mut self) -> Result<()> {
        while let Some(field) = self.arrived.pop_front() {
            let mut written = Vec::with_capacity(self.mirrors.len());
            for mirror in &mut self.mirrors {
                // SAFETY: the pinned buffer stays in `idle` with these events, and is neither
                // refilled (the thread waits for them first) nor dropped (Drop waits for
                // them) before the writes complete.
                written.push(unsafe { mirror.enqueue_write_from(field.as_slice()) }?);
            }
            self.idle.push_back((field, written));
        }
        Ok(())
    }

    /// Takes the answer to the last request, if one is out (waiting for the wind's steps),
    /// and starts writing its field into the mirror.
    pub fn settle(&mut self) -> Result<()> {
        self.receive()?;
        self.forward()
    }

    /// Pressure-solver iterations over the steps whose answer arrived.
    pub fn iterations(&self) -> u64 {
        self.iterations
    }

    /// The wall time of the steps whose answer arrived, on the wind's thread, s (its waits
    /// for its device and the field's read into pinned memory included: what the wind costs
    /// the device it runs on).
    pub fn step_seconds(&self) -> f64 {
        self.step_seconds
    }

    /// The field on the snow's device (what the snow samples after [`settle`](Self::settle)).
    pub fn mirror(&self) -> &DeviceBuffer<[f32; 4]> {
        &self.mirrors[0]
    }

    /// Every mirror: the snow's device's first, then [`add_mirror`](Self::add_mirror)'s.
    pub fn mirrors(&self) -> &[DeviceBuffer<[f32; 4]>] {
        &self.mirrors
    }

    /// The solver, once the thread's steps are done and their field is on its way to the
    /// mirror (so that a change made through it, such as a ground refresh, is seen by the
    /// thread's next steps and not raced by them).
    pub fn solver(&mut self) -> Result<MutexGuard<'_, Solver>> {
        self.settle()?;
        self.solver.lock().map_err(|_| self.stopped())
    }

    /// Rewrites the mirror from the solver's field now (after a change made through
    /// [`solver`](Self::solver)); blocking.
    pub fn rewrite_mirror(&mut self) -> Result<()> {
        let field = self.solver()?.velocity()?;
        for mirror in &mut self.mirrors {
            mirror.write(&field)?;
        }
        Ok(())
    }

    /// The error for a wind thread that is gone (it panicked).
    fn stopped(&self) -> Error {
        self.on_device(Error::Internal("the wind's thread stopped".into()))
    }

    /// `e`, naming the wind's device.
    fn on_device(&self, e: Error) -> Error {
        Error::OnDevice {
            role: "wind",
            device: self.device.clone(),
            source: Box::new(e),
        }
    }
}

impl Drop for WindBeside {
    fn drop(&mut self) {
        // The thread ends when its requests do; the pinned memory outlives every write from it.
        self.requests = None;
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
        for (_, events) in &self.idle {
            let _ = crate::cl::wait_for(events);
        }
    }
}

/// The wind's thread: runs each request's steps and reads the field into its pinned buffer,
/// until the requests end.
fn serve(solver: &Mutex<Solver>, inbox: &Receiver<Request>, outbox: &Sender<Result<Answer>>) {
    while let Ok(Request {
        steps,
        into,
        after,
        gate,
    }) = inbox.recv()
    {
        // The writes out of `into` are done before anything here can fail and drop it (they
        // have long been); behind a gate, the steps start after what it names (nothing once
        // it is dropped).
        let opened = gate.and_then(|g| g.recv().ok()).unwrap_or_default();
        let answer = crate::cl::wait_for(&after)
            .and_then(|()| crate::cl::wait_for(&opened))
            .map_err(Error::from)
            .and_then(|()| answer(solver, steps, into));
        let failed = answer.is_err();
        if outbox.send(answer).is_err() || failed {
            return;
        }
    }
}

/// Runs `steps` wind steps and reads the field into `into` (no write out of it in flight).
fn answer(solver: &Mutex<Solver>, steps: u32, mut into: PinnedBuffer<[f32; 4]>) -> Result<Answer> {
    let Ok(mut solver) = solver.lock() else {
        return Err(Error::Internal(
            "the wind solver's lock was poisoned".into(),
        ));
    };
    let mut iterations = 0;
    let start = std::time::Instant::now();
    for _ in 0..steps {
        iterations += u64::from(solver.step()?.iterations);
    }
    // The field crosses now, its last step's projection checked before it is handed over:
    // its read is enqueued first and the check's after it on the in-order queue, so that one
    // wait covers both.
    let field = solver.velocity_buffer()?;
    // SAFETY: the host does not touch `into` until the read's event is waited for below,
    // whether the check passes or not.
    let read = unsafe { into.enqueue_read_from(&field) }?;
    let checked = if steps > 0 {
        solver.check_last_step()
    } else {
        Ok(())
    };
    wait_for(std::slice::from_ref(&read))?;
    checked?;
    let seconds = start.elapsed().as_secs_f64();
    Ok(Answer {
        iterations,
        seconds,
        field: into,
    })
}
