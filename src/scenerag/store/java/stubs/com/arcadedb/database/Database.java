// Compile-time stub: the signatures Calls links against in arcadedb-engine (never packaged).
package com.arcadedb.database;

import com.arcadedb.query.sql.executor.ResultSet;
import java.util.Map;

public interface Database {
  ResultSet query(String language, String query);

  ResultSet query(String language, String query, Map<String, Object> parameters);

  ResultSet command(String language, String command);

  ResultSet command(String language, String command, Map<String, Object> parameters);
}
