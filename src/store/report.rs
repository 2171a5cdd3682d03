//! What a whole store holds (filled in below).
