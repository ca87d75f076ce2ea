import java.io.File;
import javax.xml.parsers.DocumentBuilder;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Element;
import org.w3c.dom.NamedNodeMap;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * XML DOM parser for bench/realapps: Apache Xerces (Debian's libxerces2-java, its
 * DocumentBuilderFactoryImpl, not the JDK's copy) parses FILE into a DOM `passes` times,
 * namespace-aware, and walks each tree: elements, attributes, text characters, and the
 * elements getElementsByTagNameNS("*", name) finds for one name.
 *
 * Usage: java -cp xercesImpl.jar:CLASSES XmlDom FILE passes NAME
 *
 * It checks its own result: every pass must give the same counts, and the walk's count
 * of elements called NAME must equal getElementsByTagNameNS's. Prints
 * "XmlDom elements=E attributes=A chars=C NAME=N OK" or exits 1.
 */
public final class XmlDom {
    static long elements, attributes, chars, named;

    public static void main(String[] args) throws Exception {
        File file = new File(args[0]);
        int passes = Integer.parseInt(args[1]);
        String name = args[2];
        DocumentBuilderFactory f = new org.apache.xerces.jaxp.DocumentBuilderFactoryImpl();
        f.setNamespaceAware(true);
        String first = null;
        boolean ok = true;
        for (int p = 0; p < passes; p++) {
            DocumentBuilder b = f.newDocumentBuilder();
            Element root = b.parse(file).getDocumentElement();
            elements = attributes = chars = named = 0;
            walk(root, name);
            long byTag = root.getElementsByTagNameNS("*", name).getLength();
            String line = "elements=" + elements + " attributes=" + attributes + " chars=" + chars + " " + name + "=" + named;
            ok &= byTag == named && named > 0 && (first == null || first.equals(line));
            if (first == null)
                first = line;
        }
        System.out.println("XmlDom " + first + (ok ? " OK" : " WRONG"));
        if (!ok)
            System.exit(1);
    }

    static void walk(Node n, String name) {
        if (n.getNodeType() == Node.ELEMENT_NODE) {
            elements++;
            if (name.equals(n.getLocalName()))
                named++;
            NamedNodeMap a = n.getAttributes();
            attributes += a.getLength();
        } else if (n.getNodeType() == Node.TEXT_NODE) {
            chars += n.getNodeValue().length();
        }
        NodeList kids = n.getChildNodes();
        for (int i = 0; i < kids.getLength(); i++)
            walk(kids.item(i), name);
    }
}
