// Compile-time stub: the signatures BulkLoader links against in arcadedb-engine (never packaged).
package com.arcadedb.serializer.json;

import java.util.Set;

public class JSONObject {
  public JSONObject(String json) {
    throw new UnsupportedOperationException("stub");
  }

  public int length() {
    throw new UnsupportedOperationException("stub");
  }

  public Set<String> keySet() {
    throw new UnsupportedOperationException("stub");
  }

  public boolean isNull(String key) {
    throw new UnsupportedOperationException("stub");
  }

  public Object get(String key) {
    throw new UnsupportedOperationException("stub");
  }
}
