// Compile-time stub: the signatures Calls links against in arcadedb-python-bridge (never packaged).
package com.arcadedb.python;

import com.arcadedb.query.sql.executor.ResultSet;

public final class RowBatcher {
  public static String nextJsonBatch(ResultSet resultSet, int size) {
    throw new UnsupportedOperationException("stub");
  }
}
