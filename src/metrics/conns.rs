//! The endpoint's connections and their limits: how many at once, how many per client, and which
//! one gives way when a new one comes. A connection that is not answering a request (still sending
//! its head, or kept alive between scrapes) is idle; when the endpoint is full, the idle connection
//! that has been quiet longest is closed for the new one, so idle clients cannot lock a scraper out.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// The endpoint's limits; `Limits::default()` is what `gpudeck serve` uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections open at once, over all clients.
    pub max_connections: usize,
    /// Connections open at once from one IP address.
    pub max_per_client: usize,
    /// From a request's first byte to the end of its head.
    pub header_timeout: Duration,
    /// A connection with no request for this long (since it opened, or since its last answer)
    /// is closed; a request whose first byte comes sooner has [`Limits::header_timeout`] from
    /// that byte.
    pub idle_timeout: Duration,
    /// A TLS handshake taking longer than this is dropped.
    pub handshake_timeout: Duration,
    /// A client that takes no bytes of an answer for this long is dropped.
    pub write_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: 64,
            max_per_client: 8,
            header_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(60),
            handshake_timeout: Duration::from_secs(5),
            write_timeout: Duration::from_secs(10),
        }
    }
}

/// One open connection as the tracker sees it.
#[derive(Debug)]
pub struct Conn {
    id: u64,
    peer: IpAddr,
    busy: AtomicBool,
    /// Milliseconds since the tracker's epoch when it last finished an answer or opened.
    quiet_since: AtomicU64,
    /// Milliseconds since the tracker's epoch, plus one, when the first byte of a request head
    /// came in; 0 while none is on its way.
    head_since: AtomicU64,
    close: CancellationToken,
}

impl Conn {
    /// Cancelled when the connection must give way.
    pub fn closed(&self) -> &CancellationToken {
        &self.close
    }
}

/// The open connections.
#[derive(Debug)]
pub struct Tracker {
    limits: Limits,
    epoch: Instant,
    next_id: AtomicU64,
    open: Mutex<Vec<Arc<Conn>>>,
}

/// Keeps a connection counted until dropped.
#[derive(Debug)]
pub struct Slot {
    tracker: Arc<Tracker>,
    conn: Arc<Conn>,
}

impl Slot {
    pub fn limits(&self) -> Limits {
        self.tracker.limits
    }

    pub fn conn(&self) -> &Arc<Conn> {
        &self.conn
    }

    /// A request is being answered: the connection may not be closed for another.
    pub fn busy(&self) {
        self.conn.busy.store(true, Ordering::SeqCst);
        self.conn.head_since.store(0, Ordering::SeqCst);
    }

    /// The answer is written: the connection is idle again from now.
    pub fn idle(&self) {
        self.conn
            .quiet_since
            .store(self.tracker.now_ms(), Ordering::SeqCst);
        self.conn.head_since.store(0, Ordering::SeqCst);
        self.conn.busy.store(false, Ordering::SeqCst);
    }

    /// Bytes came in: between answers, the first of them starts the request head's clock.
    pub fn heard(&self) {
        if self.conn.busy.load(Ordering::SeqCst) {
            return;
        }
        let now = self.tracker.now_ms() + 1;
        let _ = self
            .conn
            .head_since
            .compare_exchange(0, now, Ordering::SeqCst, Ordering::SeqCst);
    }

    /// How long a request head has been coming in without being complete; None while the
    /// connection waits for one (kept alive) or answers one.
    pub fn head_for(&self) -> Option<Duration> {
        if self.conn.busy.load(Ordering::SeqCst) {
            return None;
        }
        let since = self.conn.head_since.load(Ordering::SeqCst).checked_sub(1)?;
        Some(Duration::from_millis(
            self.tracker.now_ms().saturating_sub(since),
        ))
    }

    /// Whether the connection broke a limit: a request head not complete within
    /// [`Limits::header_timeout`] of its first byte, or no request within
    /// [`Limits::idle_timeout`] of the last answer.
    pub fn overdue(&self) -> bool {
        let limits = self.tracker.limits;
        self.head_for().is_some_and(|d| d >= limits.header_timeout)
            || self.quiet_for() >= limits.idle_timeout
    }

    /// How long the connection has been idle (zero while busy).
    pub fn quiet_for(&self) -> Duration {
        if self.conn.busy.load(Ordering::SeqCst) {
            return Duration::ZERO;
        }
        let since = self.conn.quiet_since.load(Ordering::SeqCst);
        Duration::from_millis(self.tracker.now_ms().saturating_sub(since))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.tracker.open.lock().unwrap_or_else(|e| e.into_inner());
        open.retain(|c| c.id != self.conn.id);
    }
}

impl Tracker {
    pub fn new(limits: Limits) -> Arc<Tracker> {
        Arc::new(Tracker {
            limits,
            epoch: Instant::now(),
            next_id: AtomicU64::new(0),
            open: Mutex::new(Vec::new()),
        })
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// A slot for a new connection from `peer`, closing the longest-idle connection (of that
    /// client when it is the one over its limit) to make room; None when every connection in the
    /// way is busy answering, and the new one must be turned away.
    pub fn admit(self: &Arc<Self>, peer: IpAddr) -> Option<Slot> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let from_peer = open.iter().filter(|c| c.peer == peer).count();
        let over_client = from_peer >= self.limits.max_per_client;
        let over_all = open.len() >= self.limits.max_connections;
        if over_client || over_all {
            let victim = open
                .iter()
                .filter(|c| !c.busy.load(Ordering::SeqCst))
                .filter(|c| !over_client || c.peer == peer)
                .min_by_key(|c| c.quiet_since.load(Ordering::SeqCst))
                .cloned()?;
            victim.close.cancel();
            open.retain(|c| c.id != victim.id);
        }
        let conn = Arc::new(Conn {
            id: self.next_id.fetch_add(1, Ordering::SeqCst),
            peer,
            busy: AtomicBool::new(false),
            quiet_since: AtomicU64::new(self.now_ms()),
            head_since: AtomicU64::new(0),
            close: CancellationToken::new(),
        });
        open.push(Arc::clone(&conn));
        Some(Slot {
            tracker: Arc::clone(self),
            conn,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(all: usize, per: usize) -> Limits {
        Limits {
            max_connections: all,
            max_per_client: per,
            ..Limits::default()
        }
    }

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2));

    #[test]
    fn a_full_endpoint_closes_the_longest_idle_connection_for_a_new_one() {
        let t = Tracker::new(limits(2, 10));
        let first = t.admit(A).unwrap();
        let second = t.admit(B).unwrap();
        let third = t.admit(B).unwrap();
        assert!(
            first.conn().closed().is_cancelled(),
            "the oldest idle gives way"
        );
        assert!(!second.conn().closed().is_cancelled());
        assert!(!third.conn().closed().is_cancelled());
        assert_eq!(t.open(), 2);
    }

    #[test]
    fn busy_connections_are_never_closed_and_a_new_one_is_turned_away() {
        let t = Tracker::new(limits(2, 10));
        let a = t.admit(A).unwrap();
        let b = t.admit(B).unwrap();
        a.busy();
        b.busy();
        assert!(t.admit(A).is_none());
        assert!(!a.conn().closed().is_cancelled() && !b.conn().closed().is_cancelled());
        b.idle();
        let c = t.admit(A).unwrap();
        assert!(b.conn().closed().is_cancelled());
        drop(c);
        assert_eq!(t.open(), 1, "a dropped slot is no longer counted");
    }

    #[test]
    fn a_client_over_its_own_limit_gives_way_to_itself_not_to_others() {
        let t = Tracker::new(limits(10, 2));
        let other = t.admit(B).unwrap();
        let a1 = t.admit(A).unwrap();
        let a2 = t.admit(A).unwrap();
        let a3 = t.admit(A).unwrap();
        assert!(a1.conn().closed().is_cancelled());
        assert!(
            !other.conn().closed().is_cancelled(),
            "another client keeps its connection"
        );
        assert!(!a2.conn().closed().is_cancelled() && !a3.conn().closed().is_cancelled());
    }

    #[test]
    fn a_head_is_timed_from_its_first_byte_and_a_kept_alive_wait_by_the_idle_limit() {
        let t = Tracker::new(Limits {
            header_timeout: Duration::from_millis(200),
            idle_timeout: Duration::from_secs(60),
            ..Limits::default()
        });
        let slot = t.admit(A).unwrap();
        slot.busy();
        slot.idle();
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(slot.head_for(), None, "no byte yet: kept alive");
        assert!(
            !slot.overdue(),
            "waiting longer than a head may take is allowed"
        );
        slot.heard();
        std::thread::sleep(Duration::from_millis(100));
        slot.heard();
        let first = slot.head_for().unwrap();
        assert!(
            first >= Duration::from_millis(100),
            "later bytes do not restart it: {first:?}"
        );
        std::thread::sleep(Duration::from_millis(150));
        assert!(slot.overdue(), "a head still incomplete past its limit");
        slot.busy();
        assert_eq!(slot.head_for(), None, "a complete head stops the clock");
        assert!(!slot.overdue());
        slot.heard();
        assert_eq!(slot.head_for(), None, "bytes while answering start nothing");
        slot.idle();
        assert_eq!(slot.head_for(), None);
    }

    #[test]
    fn a_connection_without_a_request_is_overdue_after_the_idle_limit() {
        let t = Tracker::new(Limits {
            idle_timeout: Duration::from_millis(100),
            ..Limits::default()
        });
        let slot = t.admit(A).unwrap();
        assert!(!slot.overdue());
        std::thread::sleep(Duration::from_millis(150));
        assert!(slot.overdue());
    }
}
