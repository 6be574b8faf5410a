// Compile-time stub: the signatures BulkLoader links against in arcadedb-engine (never packaged).
package com.arcadedb.graph;

import com.arcadedb.database.RID;

public class GraphBatch {
  public RID[] createVertices(String type, Object[][] properties) {
    throw new UnsupportedOperationException("stub");
  }

  public void newEdge(RID source, String type, RID target, Object... properties) {
    throw new UnsupportedOperationException("stub");
  }
}
