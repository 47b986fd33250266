package org.paimonstreaming.oracle;

import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericArray;
import org.apache.paimon.data.GenericMap;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalMap;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.MapType;
import org.apache.paimon.types.RowType;

import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.JsonNodeFactory;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.math.BigDecimal;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The JSON value encoding of tests/java_oracle.py (see its module docstring), for the types a
 * Paimon 0.8 already has (no VARIANT, no MULTISET): numbers, "NaN"/"Infinity" strings for
 * floats, base64 binary, plain decimal strings, days for DATE, millis of day for TIME,
 * {"millis", "nanos"} for timestamps, arrays, [key, value] pairs for maps, objects for rows.
 */
final class LegacyCodec {

    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private LegacyCodec() {}

    static GenericRow rowFromJson(JsonNode node, RowType type) {
        List<DataField> fields = type.getFields();
        GenericRow row = new GenericRow(fields.size());
        for (int i = 0; i < fields.size(); i++) {
            DataField f = fields.get(i);
            row.setField(i, fromJson(node.get(f.name()), f.type()));
        }
        return row;
    }

    static Object fromJson(JsonNode v, DataType type) {
        if (v == null || v.isNull()) {
            return null;
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return v.asBoolean();
            case TINYINT:
                return (byte) v.asLong();
            case SMALLINT:
                return (short) v.asLong();
            case INTEGER:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE:
                return v.intValue();
            case BIGINT:
                return v.longValue();
            case FLOAT:
                return (float) toDouble(v);
            case DOUBLE:
                return toDouble(v);
            case CHAR:
            case VARCHAR:
                return BinaryString.fromString(v.asText());
            case BINARY:
            case VARBINARY:
                return Base64.getDecoder().decode(v.asText());
            case DECIMAL:
                {
                    DecimalType dt = (DecimalType) type;
                    Decimal d = Decimal.fromBigDecimal(new BigDecimal(v.asText()), dt.getPrecision(), dt.getScale());
                    if (d == null) {
                        throw new IllegalArgumentException("decimal " + v.asText() + " does not fit " + type);
                    }
                    return d;
                }
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return Timestamp.fromEpochMillis(v.get("millis").longValue(), v.path("nanos").intValue());
            case ARRAY:
                {
                    DataType element = ((ArrayType) type).getElementType();
                    Object[] values = new Object[v.size()];
                    for (int i = 0; i < values.length; i++) {
                        values[i] = fromJson(v.get(i), element);
                    }
                    return new GenericArray(values);
                }
            case MAP:
                {
                    MapType mt = (MapType) type;
                    Map<Object, Object> map = new LinkedHashMap<>();
                    for (JsonNode pair : v) {
                        map.put(fromJson(pair.get(0), mt.getKeyType()), fromJson(pair.get(1), mt.getValueType()));
                    }
                    return new GenericMap(map);
                }
            case ROW:
                return rowFromJson(v, (RowType) type);
            default:
                throw new UnsupportedOperationException("unsupported type: " + type);
        }
    }

    private static double toDouble(JsonNode v) {
        if (v.isTextual()) {
            String s = v.asText();
            if (s.equals("NaN")) {
                return Double.NaN;
            } else if (s.equals("Infinity")) {
                return Double.POSITIVE_INFINITY;
            } else if (s.equals("-Infinity")) {
                return Double.NEGATIVE_INFINITY;
            }
            return Double.parseDouble(s);
        }
        return v.doubleValue();
    }

    static ObjectNode rowToJson(InternalRow row, RowType type) {
        ObjectNode o = NODES.objectNode();
        List<DataField> fields = type.getFields();
        for (int i = 0; i < fields.size(); i++) {
            DataField f = fields.get(i);
            o.set(f.name(), toJson(InternalRow.createFieldGetter(f.type(), i).getFieldOrNull(row), f.type()));
        }
        return o;
    }

    static JsonNode toJson(Object value, DataType type) {
        if (value == null) {
            return NODES.nullNode();
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return NODES.booleanNode((Boolean) value);
            case TINYINT:
            case SMALLINT:
            case INTEGER:
            case BIGINT:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE:
                return NODES.numberNode(((Number) value).longValue());
            case FLOAT:
            case DOUBLE:
                {
                    double d = ((Number) value).doubleValue();
                    if (Double.isNaN(d)) {
                        return NODES.textNode("NaN");
                    } else if (Double.isInfinite(d)) {
                        return NODES.textNode(d > 0 ? "Infinity" : "-Infinity");
                    }
                    return NODES.numberNode(d);
                }
            case CHAR:
            case VARCHAR:
                return NODES.textNode(value.toString());
            case BINARY:
            case VARBINARY:
                return NODES.textNode(Base64.getEncoder().encodeToString((byte[]) value));
            case DECIMAL:
                return NODES.textNode(((Decimal) value).toBigDecimal().toPlainString());
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                {
                    Timestamp ts = (Timestamp) value;
                    ObjectNode o = NODES.objectNode();
                    o.put("millis", ts.getMillisecond());
                    o.put("nanos", ts.getNanoOfMillisecond());
                    return o;
                }
            case ARRAY:
                return arrayToJson((InternalArray) value, ((ArrayType) type).getElementType());
            case MAP:
                {
                    MapType mt = (MapType) type;
                    InternalMap map = (InternalMap) value;
                    InternalArray keys = map.keyArray();
                    InternalArray values = map.valueArray();
                    InternalArray.ElementGetter kg = InternalArray.createElementGetter(mt.getKeyType());
                    InternalArray.ElementGetter vg = InternalArray.createElementGetter(mt.getValueType());
                    ArrayNode out = NODES.arrayNode();
                    for (int i = 0; i < map.size(); i++) {
                        ArrayNode pair = NODES.arrayNode();
                        pair.add(toJson(kg.getElementOrNull(keys, i), mt.getKeyType()));
                        pair.add(toJson(vg.getElementOrNull(values, i), mt.getValueType()));
                        out.add(pair);
                    }
                    return out;
                }
            case ROW:
                return rowToJson((InternalRow) value, (RowType) type);
            default:
                throw new UnsupportedOperationException("unsupported type: " + type);
        }
    }

    private static ArrayNode arrayToJson(InternalArray array, DataType elementType) {
        InternalArray.ElementGetter getter = InternalArray.createElementGetter(elementType);
        ArrayNode out = NODES.arrayNode();
        for (int i = 0; i < array.size(); i++) {
            out.add(toJson(getter.getElementOrNull(array, i), elementType));
        }
        return out;
    }
}
