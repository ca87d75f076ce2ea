import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.store.RAMDirectory;
import org.apache.lucene.util.Version;

/**
 * Search-engine indexer for bench/realapps: Lucene 4.10 (Debian's liblucene4.10-java)
 * indexes every regular file under DIR (sorted by path, read as UTF-8 text) `passes` times
 * into a fresh in-memory index with StandardAnalyzer, then searches it.
 *
 * Usage: java -cp lucene-core.jar:lucene-analyzers-common.jar:CLASSES LuceneIndex DIR passes
 *
 * It checks its own result: the index must hold every file once per pass, and each query
 * term's hit count must equal the number of files whose analyzed text contains it, counted
 * independently by tokenizing with the same analyzer (no index involved). Prints one line
 * "LuceneIndex docs=N hits=a,b,c OK" or exits 1.
 */
public final class LuceneIndex {
    static final String[] TERMS = {"license", "copyright", "software", "warranty", "gnu", "public", "debian"};

    public static void main(String[] args) throws IOException {
        Path dir = Paths.get(args[0]);
        int passes = Integer.parseInt(args[1]);
        List<Path> files = new ArrayList<>();
        try (Stream<Path> s = Files.walk(dir)) {
            s.filter(p -> Files.isRegularFile(p) && p.getFileName().toString().equals("copyright")).sorted().forEach(files::add);
        }
        List<String> texts = new ArrayList<>();
        for (Path p : files)
            texts.add(new String(Files.readAllBytes(p), StandardCharsets.UTF_8));
        StandardAnalyzer analyzer = new StandardAnalyzer();
        int docs = 0;
        long[] hits = new long[TERMS.length];
        for (int pass = 0; pass < passes; pass++) {
            RAMDirectory ram = new RAMDirectory();
            try (IndexWriter w = new IndexWriter(ram, new IndexWriterConfig(Version.LUCENE_4_10_4, analyzer))) {
                for (int i = 0; i < files.size(); i++) {
                    Document d = new Document();
                    d.add(new StringField("path", files.get(i).toString(), Field.Store.YES));
                    d.add(new TextField("body", texts.get(i), Field.Store.NO));
                    w.addDocument(d);
                }
            }
            try (DirectoryReader r = DirectoryReader.open(ram)) {
                IndexSearcher s = new IndexSearcher(r);
                docs = r.numDocs();
                for (int t = 0; t < TERMS.length; t++)
                    hits[t] = s.search(new TermQuery(new Term("body", TERMS[t])), 1).totalHits;
            }
        }
        // Independent count: files whose token stream holds the term.
        long[] expect = new long[TERMS.length];
        for (String text : texts) {
            java.util.Set<String> seen = new java.util.HashSet<>();
            try (org.apache.lucene.analysis.TokenStream ts = analyzer.tokenStream("body", text)) {
                org.apache.lucene.analysis.tokenattributes.CharTermAttribute a =
                        ts.addAttribute(org.apache.lucene.analysis.tokenattributes.CharTermAttribute.class);
                ts.reset();
                while (ts.incrementToken())
                    seen.add(a.toString());
                ts.end();
            }
            for (int t = 0; t < TERMS.length; t++)
                if (seen.contains(TERMS[t]))
                    expect[t]++;
        }
        StringBuilder sb = new StringBuilder();
        boolean ok = docs == files.size();
        for (int t = 0; t < TERMS.length; t++) {
            sb.append(t == 0 ? "" : ",").append(hits[t]);
            ok &= hits[t] == expect[t];
        }
        System.out.println("LuceneIndex docs=" + docs + " hits=" + sb + (ok ? " OK" : " WRONG expected " + java.util.Arrays.toString(expect)));
        if (!ok)
            System.exit(1);
    }
}
