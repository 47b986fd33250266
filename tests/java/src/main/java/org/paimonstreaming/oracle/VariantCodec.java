package org.paimonstreaming.oracle;

import org.apache.paimon.data.variant.GenericVariant;
import org.apache.paimon.data.variant.Variant;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeRoot;

import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.JsonNodeFactory;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.Base64;

/**
 * VARIANT values (Paimon 1.1+) in the JSON encoding of {@link ValueCodec}: written as a JSON
 * text string (Java's GenericVariant.fromJson encodes it) or as {"value": base64, "metadata":
 * base64} (the bytes as given); read as {"json": toJson(), "value": base64, "metadata": base64}.
 */
final class VariantCodec implements ValueCodec.Extension {

    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    @Override
    public Object fromJson(JsonNode v, DataType type) {
        if (type.getTypeRoot() != DataTypeRoot.VARIANT) {
            throw new UnsupportedOperationException("unsupported type: " + type);
        }
        if (v.isTextual()) {
            return GenericVariant.fromJson(v.asText());
        }
        return new GenericVariant(
                Base64.getDecoder().decode(v.get("value").asText()),
                Base64.getDecoder().decode(v.get("metadata").asText()));
    }

    @Override
    public JsonNode toJson(Object value, DataType type) {
        if (type.getTypeRoot() != DataTypeRoot.VARIANT) {
            throw new UnsupportedOperationException("unsupported type: " + type);
        }
        Variant variant = (Variant) value;
        ObjectNode o = NODES.objectNode();
        o.put("json", variant.toJson());
        o.put("value", Base64.getEncoder().encodeToString(variant.value()));
        o.put("metadata", Base64.getEncoder().encodeToString(variant.metadata()));
        return o;
    }
}
