// Compile-time stub: the signatures BulkLoader links against in arcadedb-engine (never packaged).
package com.arcadedb.database;

public class RID {
  @Override
  public String toString() {
    throw new UnsupportedOperationException("stub");
  }
}
