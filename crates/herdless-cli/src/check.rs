//! `herdless check` (in progress).
