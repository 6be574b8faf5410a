// Compile-time stub: the signatures Calls links against in arcadedb-engine (never packaged).
package com.arcadedb.query.sql.executor;

public interface ResultSet {}
