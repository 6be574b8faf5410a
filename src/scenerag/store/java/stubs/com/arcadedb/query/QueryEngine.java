// Compile-time stub: the signatures Calls links against in arcadedb-engine (never packaged).
package com.arcadedb.query;

public interface QueryEngine {
  AnalyzedQuery analyze(String query);

  interface AnalyzedQuery {}
}
