package scenerag.arcade;

import com.arcadedb.database.RID;
import com.arcadedb.graph.GraphBatch;
import com.arcadedb.serializer.json.JSONObject;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Columnar bulk loader for scenerag's embedded ArcadeDB backend.
 *
 * <p>Vertices arrive as parallel arrays (symbols, classes, x/y/z) plus an optional JSON object of further
 * properties per row; edges arrive as int indices into the vertices created by this loader. Nothing crosses
 * the Python/Java boundary per value, and no RID is formatted or parsed. The stored layout matches
 * {@code scenerag.store.rows.node_properties}: {@code nodeSymbol}, {@code class}, {@code center} (a map of
 * x, y, z), {@code cell} (the grid key {@code floor(x/size)_floor(y/size)}), then the extras.
 */
public final class BulkLoader {
  private static final Object[] NO_PROPERTIES = new Object[0];

  private final GraphBatch batch;
  private final double cellSize;
  private RID[] rids;
  private int count;

  public BulkLoader(GraphBatch batch, int expectedVertices, double cellSize) {
    this.batch = batch;
    this.cellSize = cellSize;
    this.rids = new RID[Math.max(expectedVertices, 16)];
  }

  /** Number of vertices created so far; the next vertex gets this index. */
  public int vertexCount() {
    return count;
  }

  /**
   * Creates one vertex of {@code type} per row and returns the index of the first. {@code xyz} holds three
   * values per row; {@code extras} is null or holds, per row, null or a JSON object of further properties
   * (null values are skipped).
   */
  public int addVertices(String type, String[] symbols, String[] classes, double[] xyz, String[] extras) {
    int n = symbols.length;
    if (classes.length != n || xyz.length != 3 * n || (extras != null && extras.length != n))
      throw new IllegalArgumentException("column lengths differ: " + n + " symbols, " + classes.length
          + " classes, " + xyz.length + " coordinates, " + (extras == null ? n : extras.length) + " extras");
    Object[][] rows = new Object[n][];
    for (int i = 0; i < n; i++) {
      double x = xyz[3 * i], y = xyz[3 * i + 1], z = xyz[3 * i + 2];
      Map<String, Object> center = new LinkedHashMap<>(4);
      center.put("x", x);
      center.put("y", y);
      center.put("z", z);
      String cell = (long) Math.floor(x / cellSize) + "_" + (long) Math.floor(y / cellSize);
      Object[] row = {"nodeSymbol", symbols[i], "class", classes[i], "center", center, "cell", cell};
      String extra = extras == null ? null : extras[i];
      if (extra != null) {
        Object[] more = pairs(new JSONObject(extra));
        row = Arrays.copyOf(row, row.length + more.length);
        System.arraycopy(more, 0, row, row.length - more.length, more.length);
      }
      rows[i] = row;
    }
    RID[] created = batch.createVertices(type, rows);
    if (count + n > rids.length) rids = Arrays.copyOf(rids, Math.max(count + n, 2 * rids.length));
    System.arraycopy(created, 0, rids, count, n);
    int first = count;
    count += n;
    return first;
  }

  /**
   * Buffers one edge of {@code type} per pair {@code (sources[i], targets[i])} of vertex indices;
   * {@code properties} is null or holds, per edge, null or a JSON object of edge properties.
   */
  public void addEdges(String type, int[] sources, int[] targets, String[] properties) {
    int n = sources.length;
    if (targets.length != n || (properties != null && properties.length != n))
      throw new IllegalArgumentException("column lengths differ: " + n + " sources, " + targets.length
          + " targets, " + (properties == null ? n : properties.length) + " property rows");
    for (int i = 0; i < n; i++) {
      int s = sources[i], t = targets[i];
      if (s < 0 || s >= count || t < 0 || t >= count)
        throw new IndexOutOfBoundsException("edge " + i + " of type " + type + " names vertex index "
            + (s < 0 || s >= count ? s : t) + ", only " + count + " vertices exist");
      String json = properties == null ? null : properties[i];
      batch.newEdge(rids[s], type, rids[t], json == null ? NO_PROPERTIES : pairs(new JSONObject(json)));
    }
  }

  /** The non-null entries of {@code object} as alternating keys and values. */
  private static Object[] pairs(JSONObject object) {
    Object[] out = new Object[2 * object.length()];
    int k = 0;
    for (String key : object.keySet()) {
      if (object.isNull(key)) continue;
      out[k++] = key;
      out[k++] = object.get(key);
    }
    return k == out.length ? out : Arrays.copyOf(out, k);
  }
}
