package scenerag.arcade;

import com.arcadedb.database.Database;
import com.arcadedb.python.RowBatcher;
import com.arcadedb.query.QueryEngine;
import com.arcadedb.query.sql.executor.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The engine calls a query makes, with the engine's errors returned as values instead of thrown.
 *
 * <p>A Java exception that reaches Python through JPype costs more than the call: JPype 1.7.1 turns its
 * stack trace into Python traceback, frame and function objects (about 44 of each for a Cypher parse
 * error) and leaks one reference to each traceback, so none of them is ever freed. A server answering
 * parse errors and timeouts all day would pile up millions of them, and every full Python collection
 * (JPype runs one after each Java collection, holding the GIL) walks them all. Here the exception is
 * caught in Java and only its text crosses: {@link #describe}.
 */
public final class Calls {
  private static final int MAX_CAUSES = 64;

  private Calls() {}

  /** {@code engine.analyze(text)}: null when the text parses and passes the semantic check, else the error. */
  public static String[] analyze(QueryEngine engine, String text) {
    try {
      engine.analyze(text);
      return null;
    } catch (Throwable error) {
      return describe(error);
    }
  }

  /**
   * {@code database.query(language, text, parameters)}, or {@code command(...)} when {@code command}
   * (without parameters when {@code parameters} is null): the result set (null when the engine returns
   * none), or the error as a {@code String[]} ({@link #describe}).
   */
  public static Object run(
      Database database, boolean command, String language, String text, Map<String, Object> parameters) {
    try {
      if (parameters == null) {
        return command ? database.command(language, text) : database.query(language, text);
      }
      return command
          ? database.command(language, text, parameters)
          : database.query(language, text, parameters);
    } catch (Throwable error) {
      return describe(error);
    }
  }

  /**
   * The next batch of at most {@code size} rows as a JSON array ({@code RowBatcher.nextJsonBatch}, which
   * closes the result set after its last row), or the error as a {@code String[]} (the caller closes the
   * result set then).
   */
  public static Object nextJsonBatch(ResultSet resultSet, int size) {
    try {
      return RowBatcher.nextJsonBatch(resultSet, size);
    } catch (Throwable error) {
      return describe(error);
    }
  }

  /**
   * {@code error.toString()}, then the class name and message (empty when null) of {@code error} and of each
   * of its causes, outermost first: {@code [text, class0, message0, class1, message1, ...]}.
   */
  public static String[] describe(Throwable error) {
    List<String> out = new ArrayList<>();
    out.add(String.valueOf(error));
    Throwable current = error;
    for (int i = 0; current != null && i < MAX_CAUSES; i++) {
      out.add(current.getClass().getName());
      String message = current.getMessage();
      out.add(message == null ? "" : message);
      Throwable cause = current.getCause();
      current = cause == current ? null : cause;
    }
    return out.toArray(new String[0]);
  }
}
